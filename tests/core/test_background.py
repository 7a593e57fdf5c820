"""The one wakeable background loop (`app.core.background.Ticker`): a wake cuts the sleep short
and is not lost while a round runs, a failing step is logged and the loop goes on, stop ends
it promptly (a running step too), and it never spins."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.background import Ticker

WAIT = 2.0  # the longest any of these waits may take; the sleeps they cut short are far longer


class Steps:
    """A step that records its rounds, and fails the rounds named in `failing`."""

    def __init__(self, failing: frozenset[int] = frozenset()) -> None:
        self.calls = 0
        self.failing = failing

    async def __call__(self) -> int:
        self.calls += 1
        if self.calls in self.failing:
            raise RuntimeError(f"round {self.calls} breaks")
        return self.calls


async def test_a_wake_cuts_the_sleep_short():
    steps = Steps()
    ticker = Ticker("t", steps, interval=600.0, first_delay=600.0)
    await ticker.start()
    try:
        ticker.wake()  # the first delay, too
        async with asyncio.timeout(WAIT):
            assert await ticker.wait_rounds(1) == 1
        started = time.monotonic()
        ticker.wake()
        async with asyncio.timeout(WAIT):
            assert await ticker.wait_rounds(2) == 2
        assert time.monotonic() - started < WAIT
        assert steps.calls == 2
    finally:
        await ticker.stop()


async def test_a_wake_during_a_round_is_not_lost_and_many_wakes_are_one():
    release = asyncio.Event()
    entered = asyncio.Event()
    steps = Steps()

    async def slow() -> int:
        entered.set()
        await release.wait()
        return await steps()

    ticker = Ticker("t", slow, interval=600.0)
    await ticker.start()
    try:
        await entered.wait()
        for _ in range(100):
            ticker.wake()
        release.set()
        async with asyncio.timeout(WAIT):
            assert await ticker.wait_rounds(2) == 2
        await asyncio.sleep(0.1)
        assert ticker.rounds == 2  # a hundred wakes in one round start one more, not a hundred
    finally:
        await ticker.stop()


async def test_a_failing_step_is_logged_and_the_loop_goes_on(caplog):
    caplog.set_level(logging.DEBUG, logger="app.core.background")
    steps = Steps(failing=frozenset({1, 2}))
    ticker = Ticker("flaky", steps, interval=600.0, error_delay=0.01)
    await ticker.start()
    try:
        async with asyncio.timeout(WAIT):
            await ticker.wait_rounds(2)
        assert ticker.failures == 2
        async with asyncio.timeout(WAIT):
            await ticker.wait_rounds(3)  # the failures' short pause, then a good round
        assert ticker.failures == 0 and steps.calls == 3
    finally:
        await ticker.stop()
    failed = [r for r in caplog.records if r.getMessage().startswith("background round failed")]
    assert [r.fields["round"] for r in failed] == [1, 2]  # type: ignore[attr-defined]
    assert all(r.fields["task"] == "flaky" and r.exc_info for r in failed)  # type: ignore[attr-defined]
    assert failed[1].fields["failures_in_a_row"] == 2  # type: ignore[attr-defined]
    good = [r for r in caplog.records if r.getMessage() == "background round"]
    assert [r.fields["result"] for r in good] == [3]  # type: ignore[attr-defined]
    assert good[0].fields["next_in_s"] == 600.0  # type: ignore[attr-defined]


async def test_the_interval_can_follow_the_steps_result():
    seen: list[float] = []

    async def step() -> float:
        seen.append(time.monotonic())
        return 0.05 if len(seen) < 3 else 600.0

    ticker = Ticker("t", step, interval=lambda seconds: seconds, error_delay=1.0)
    await ticker.start()
    try:
        async with asyncio.timeout(WAIT):
            await ticker.wait_rounds(3)
        await asyncio.sleep(0.2)
        assert len(seen) == 3  # then the step asked for ten minutes
        assert all(later - earlier >= 0.04 for earlier, later in zip(seen, seen[1:]))
    finally:
        await ticker.stop()


@pytest.mark.parametrize("where", ["sleeping", "in the step"])
async def test_stop_ends_the_loop_promptly(where):
    entered = asyncio.Event()
    cancelled = []

    async def step() -> None:
        entered.set()
        if where == "in the step":
            try:
                await asyncio.Event().wait()  # a step that would never end
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

    ticker = Ticker("t", step, interval=600.0)
    await ticker.start()
    await entered.wait()
    waiter = asyncio.create_task(ticker.wait_rounds(5))
    started = time.monotonic()
    await ticker.stop()
    assert time.monotonic() - started < 1.0
    assert cancelled == ([True] if where == "in the step" else [])
    async with asyncio.timeout(WAIT):
        assert await waiter == (0 if where == "in the step" else 1)  # no round will come
    await ticker.stop()  # twice is fine


async def test_it_does_not_spin():
    quiet = Steps()
    failing = Steps(failing=frozenset(range(1, 1000)))
    tickers = [Ticker("quiet", quiet, interval=0.5),
               Ticker("failing", failing, interval=600.0, error_delay=0.05)]
    for ticker in tickers:
        await ticker.start()
    await asyncio.sleep(0.3)
    for ticker in tickers:
        await ticker.stop()
    assert quiet.calls == 1
    assert 2 <= failing.calls <= 8  # a failure pauses error_delay, it does not retry at once


def test_a_ticker_that_could_spin_is_refused():
    async def step() -> float:
        return 1.0

    with pytest.raises(ValueError, match="error_delay"):
        Ticker("t", step, interval=lambda seconds: seconds)
    with pytest.raises(ValueError, match="positive"):
        Ticker("t", step, interval=0.0)


async def test_the_loop_can_run_in_the_callers_task():
    steps = Steps()
    ticker = Ticker("t", steps, interval=600.0)
    task = asyncio.create_task(ticker.run())
    async with asyncio.timeout(WAIT):
        assert await ticker.wait_rounds(1) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await ticker.wait_rounds(2) == 1  # ended: the waiter does not hang


@settings(max_examples=30, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=8))
def test_every_round_runs_whatever_fails(outcomes):
    """For any sequence of good and failing rounds (each started by a wake), every round
    runs once, in order, and `failures` is the run of failures at the end."""
    failing = frozenset(i + 1 for i, ok in enumerate(outcomes) if not ok)

    async def scenario() -> tuple[int, int, int]:
        steps = Steps(failing)
        ticker = Ticker("t", steps, interval=600.0, error_delay=600.0)
        await ticker.start()
        async with asyncio.timeout(WAIT):
            for number in range(1, len(outcomes) + 1):
                assert await ticker.wait_rounds(number) == number
                if number < len(outcomes):
                    ticker.wake()
        await ticker.stop()
        return steps.calls, ticker.rounds, ticker.failures

    trailing = len(outcomes) - max((i + 1 for i, ok in enumerate(outcomes) if ok), default=0)
    assert asyncio.run(scenario()) == (len(outcomes), len(outcomes), trailing)
