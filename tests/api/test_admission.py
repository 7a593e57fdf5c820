"""A burst of requests begins at most twice `ADMIT_PER_ROUND` of them per event-loop round
(issue 24 item 18: 160 handlers' first steps in one round held the loop ~35 ms), first come
first served; requests that come a few per round wait for nothing (issue 26 item 4); a
request whose client goes away while it waits gives up its place."""

from __future__ import annotations

import asyncio
import collections

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.api.app_keys import ADMISSION
from app.core.admission import ADMIT_PER_ROUND, RoundAdmission
from tests.conftest import AUTH


def _count_rounds(loop: asyncio.AbstractEventLoop, monkeypatch) -> list[int]:
    if not hasattr(loop, "_run_once"):
        pytest.skip("counts the rounds of asyncio's own loop")
    rounds = [0]
    run_once = loop._run_once

    def counted() -> None:
        rounds[0] += 1
        run_once()

    monkeypatch.setattr(loop, "_run_once", counted)
    return rounds


async def test_a_crowd_is_let_in_a_batch_per_round_in_arrival_order(monkeypatch):
    rounds = _count_rounds(asyncio.get_running_loop(), monkeypatch)
    admission = RoundAdmission()
    admitted: list[tuple[int, int]] = []  # (who, the round it was let in)

    async def arrive(who: int) -> None:
        await admission.admit()
        admitted.append((who, rounds[0]))

    await asyncio.gather(*(arrive(i) for i in range(200)))
    assert [who for who, _ in admitted] == list(range(200))
    per_round = collections.Counter(r for _, r in admitted)
    assert max(per_round.values()) <= 2 * ADMIT_PER_ROUND
    assert len(per_round) >= 200 // ADMIT_PER_ROUND


@settings(max_examples=150, deadline=None)
@given(per_round=st.integers(1, 8),
       arrivals=st.lists(st.integers(0, 12), min_size=1, max_size=60))
def test_any_schedule_of_arrivals_is_let_in_in_order_a_batch_per_round(per_round, arrivals):
    """Arrivals spread over rounds in any way (`arrivals[i]`: the round request i comes in):
    all are let in, in the order they asked, never more than twice `per_round` in one round,
    and one that comes in a round with room and nobody waiting is let in in that round."""
    loop = asyncio.new_event_loop()
    try:
        rounds = [0]
        run_once = loop._run_once

        def counted() -> None:
            rounds[0] += 1
            run_once()

        loop._run_once = counted
        admission = RoundAdmission(per_round=per_round)
        asked: list[int] = []
        admitted: list[int] = []
        per_round_in: collections.Counter[int] = collections.Counter()

        at_once: list[bool] = []  # let in in the round it asked, where there was room

        async def arrive(who: int, after_rounds: int) -> None:
            for _ in range(after_rounds):
                await asyncio.sleep(0)
            asked.append(who)
            room = admission.has_room
            asked_in = rounds[0]
            await admission.admit()
            admitted.append(who)
            per_round_in[rounds[0]] += 1
            if room:
                at_once.append(rounds[0] == asked_in)

        async def everyone() -> None:
            await asyncio.gather(*(arrive(i, r) for i, r in enumerate(arrivals)))

        loop.run_until_complete(everyone())
    finally:
        loop.close()
    assert admitted == asked
    assert max(per_round_in.values()) <= 2 * per_round
    assert all(at_once)


async def test_requests_that_come_one_per_round_are_let_in_without_waiting(monkeypatch):
    """The burst bench's shape at rest: a request every round or so. Each is let in in the
    round it asks (before, each waited a round whenever one had been let in lately)."""
    rounds = _count_rounds(asyncio.get_running_loop(), monkeypatch)
    admission = RoundAdmission()
    waited: list[int] = []

    async def arrive(after_rounds: int) -> None:
        for _ in range(after_rounds):
            await asyncio.sleep(0)
        asked_in = rounds[0]
        await admission.admit()
        waited.append(rounds[0] - asked_in)

    await asyncio.gather(*(arrive(i) for i in range(100)))
    assert waited == [0] * 100


async def test_a_waiter_that_is_cancelled_gives_up_its_place():
    admission = RoundAdmission(per_round=2)
    admitted: list[int] = []

    async def arrive(who: int) -> None:
        await admission.admit()
        admitted.append(who)

    tasks = [asyncio.create_task(arrive(i)) for i in range(8)]
    await asyncio.sleep(0)  # 0 and 1 are in, the rest wait
    tasks[3].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert tasks[3].cancelled()
    assert admitted == [0, 1, 2, 4, 5, 6, 7]
    # The cancelled place did not leave the count short: a newcomer still gets in.
    await asyncio.wait_for(admission.admit(), 1.0)


async def test_every_request_of_the_app_passes_the_admission(client, monkeypatch):
    """The outermost middleware asks the app's admission for every request: 60 requests at
    once are all answered, never more than twice `ADMIT_PER_ROUND` let in per round."""
    rounds = _count_rounds(asyncio.get_running_loop(), monkeypatch)
    admission = client.app[ADMISSION]
    let_in: collections.Counter[int] = collections.Counter()
    admit = admission.admit

    async def counted_admit() -> None:
        await admit()
        let_in[rounds[0]] += 1

    monkeypatch.setattr(admission, "admit", counted_admit)

    async def ask() -> int:
        response = await client.get("/api/health", headers=AUTH)
        await response.read()
        return response.status

    statuses = await asyncio.gather(*(ask() for _ in range(60)))
    assert statuses == [200] * 60
    assert sum(let_in.values()) == 60
    assert max(let_in.values()) <= 2 * ADMIT_PER_ROUND
