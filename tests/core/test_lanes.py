"""The event loop's two lanes (app.core.lanes): normal work is not held behind background
work for more than a slice, each lane keeps asyncio's order, neither lane starves, and a
task started in the background lane takes the tasks it starts with it."""

from __future__ import annotations

import asyncio
import contextvars
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.lanes import BACKGROUND, BACKGROUND_SLICE, LaneLoop, in_background
from tests.waiting import until


def background_context() -> contextvars.Context:
    context = contextvars.copy_context()
    context.run(BACKGROUND.set, True)
    return context


def spin(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def run_on(loop: asyncio.AbstractEventLoop, schedule, expected: int) -> list:  # noqa: ANN001
    """Schedule callbacks with `schedule(loop, ran)`, run the loop until `expected` of them
    have run (each appends to `ran`)."""
    ran: list = []
    try:
        schedule(loop, ran)
        loop.run_until_complete(until(lambda: len(ran) >= expected))
    finally:
        loop.close()
    return ran


def crowd_then_one(loop: asyncio.AbstractEventLoop, ran: list) -> None:
    """200 background callbacks of 0.5 ms each, then one normal callback."""
    context = background_context()
    for i in range(200):
        loop.call_soon(lambda i=i: (spin(0.0005), ran.append(("background", i))),
                       context=context)
    loop.call_soon(lambda: ran.append(("normal", 0)))


def test_a_normal_callback_waits_at_most_one_slice_behind_the_background_lane() -> None:
    ran = run_on(LaneLoop(), crowd_then_one, 201)
    before = ran.index(("normal", 0))
    # One slice: as many 0.5 ms callbacks as fit in it, and the one that crossed its end.
    assert before <= BACKGROUND_SLICE / 0.0005 + 1, before
    assert len(ran) == 201


def test_on_a_plain_loop_the_same_callback_waits_behind_all_of_them() -> None:
    """What the lanes change (and what the test above would see without them)."""
    ran = run_on(asyncio.SelectorEventLoop(), crowd_then_one, 201)
    assert ran.index(("normal", 0)) == 200


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_each_lane_keeps_its_order_and_every_callback_runs_once(plan) -> None:  # noqa: ANN001
    """`plan`: (background?, scheduled from inside an earlier callback?) per callback."""
    order: dict[bool, list[int]] = {True: [], False: []}  # each lane's callbacks as scheduled

    def schedule(loop: asyncio.AbstractEventLoop, ran: list) -> None:
        lanes = {True: background_context(), False: contextvars.copy_context()}

        def callback(n: int, lane: bool) -> None:
            ran.append((lane, n))
            spin(0.0003)

        def add(n: int) -> None:
            lane, _ = plan[n]
            order[lane].append(n)
            loop.call_soon(callback, n, lane, context=lanes[lane])

        for n, (_, later) in enumerate(plan):
            if later:  # scheduled later, from a callback of the normal lane
                loop.call_soon(add, n)
            else:
                add(n)

    ran = run_on(LaneLoop(), schedule, len(plan))
    assert sorted(n for _, n in ran) == list(range(len(plan)))
    for lane in (True, False):
        assert [n for ran_lane, n in ran if ran_lane == lane] == order[lane]


def test_busy_normal_work_does_not_starve_the_background_lane() -> None:
    loop = LaneLoop()
    done: list[int] = []

    async def always_busy() -> None:
        while len(done) < 20:  # a normal-lane task that is always ready again
            spin(0.001)
            await asyncio.sleep(0)

    async def background_steps() -> None:
        for i in range(20):
            done.append(i)
            await asyncio.sleep(0)

    async def main() -> None:
        worker = in_background(background_steps(), name="steps")
        await asyncio.wait_for(always_busy(), 5)
        await worker

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert done == list(range(20))


def test_a_task_started_in_the_background_lane_starts_its_own_tasks_there() -> None:
    seen: dict[str, bool] = {}

    async def child() -> None:
        seen["child"] = BACKGROUND.get()

    async def parent() -> None:
        seen["parent"] = BACKGROUND.get()
        await asyncio.create_task(child())

    async def main() -> None:
        await in_background(parent(), name="parent")
        seen["caller"] = BACKGROUND.get()

    loop = LaneLoop()
    try:
        loop.run_until_complete(main())
        assert loop.background_waiting() == 0
    finally:
        loop.close()
    assert seen == {"parent": True, "child": True, "caller": False}


def test_a_cancelled_background_callback_never_runs_and_a_failing_one_stops_no_other() -> None:
    errors: list[dict] = []

    def schedule(loop: asyncio.AbstractEventLoop, ran: list) -> None:
        loop.set_exception_handler(lambda _, context: errors.append(context))
        context = background_context()
        loop.call_soon(lambda: 1 / 0, context=context)
        loop.call_soon(ran.append, "cancelled", context=context).cancel()
        loop.call_soon(ran.append, "after", context=context)

    assert run_on(LaneLoop(), schedule, 1) == ["after"]
    assert isinstance(errors[0]["exception"], ZeroDivisionError)
