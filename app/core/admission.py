"""How many new requests may begin their work in one event-loop round.

A burst of connections arrives together: asyncio accepts and reads a hundred of them in one
round, and their handlers' first steps (authentication, validation, the accept script's
call) are then all ready in the next one. 160 such steps held the loop for ~35 ms, and every
task ready behind them — a pair's turn, a WebSocket push, the 1 ms ticker of the stall bench —
waited that long (issue 24 item 18). `RoundAdmission` lets `ADMIT_PER_ROUND` requests start
per round (at most twice that, see the class) and the rest in the rounds after, first come
first served: each waits a round or a few, which is far less than all of them holding one
round together.
"""

from __future__ import annotations

import asyncio
import collections

# Requests let in between two marks (see `RoundAdmission`); one round runs at most twice as
# many handlers' first steps.
ADMIT_PER_ROUND = 8


class RoundAdmission:
    """`await admission.admit()` returns at once while few requests come, else in a later
    round, in arrival order. A waiter that is cancelled (its client went away) gives up its
    place.

    Rounds cannot be seen from inside the loop, only marked: a callback scheduled now runs in
    the next round, after whatever was ready before it. The mark's callback opens a window
    that lasts until its next run (about one round): in it, up to `per_round` requests are let
    in — those it wakes (they run in the round after it) and, while there is room and nobody
    waits or is woken and not yet running, newcomers at once. A round runs the tail of one
    window and the head of the next: at most twice `per_round` requests' first steps. A request that comes while the server is
    not crowded waits for nothing (under the 1 000-pair burst, waiting a round whenever
    another request had been let in lately made the admission a third of the accept's p99,
    issue 26 item 4).
    """

    def __init__(self, per_round: int = ADMIT_PER_ROUND) -> None:
        self.per_round = per_round
        self._let_in = 0  # in this window: at once, or woken for the next round
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._woken = 0  # let in, not yet running: a newcomer let in now would pass them
        self._marked = False

    @property
    def has_room(self) -> bool:
        """A request asking now is let in at once."""
        return not self._waiting and not self._woken and self._let_in < self.per_round

    async def admit(self) -> None:
        if self.has_room:
            self._let_in += 1
            if not self._marked:
                self._mark()
            return
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        try:
            await future
        finally:
            if future.done() and not future.cancelled():  # woken (and perhaps cancelled since)
                self._woken -= 1

    def _mark(self) -> None:
        self._marked = True
        asyncio.get_running_loop().call_soon(self._next_round)

    def _next_round(self) -> None:
        """A new window: wake as many waiters as it holds, in arrival order."""
        self._let_in = 0
        while self._waiting and self._let_in < self.per_round:
            future = self._waiting.popleft()
            if not future.done():
                future.set_result(None)  # it runs in the next round, with the others woken
                self._let_in += 1
                self._woken += 1
        self._marked = False
        if self._waiting or self._let_in:  # the window's count must be reset again
            self._mark()
