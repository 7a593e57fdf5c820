"""How many new requests may begin their work in one event-loop round.

A burst of connections arrives together: asyncio accepts and reads a hundred of them in one
round, and their handlers' first steps (authentication, validation, the accept script's
call) are then all ready in the next one. 160 such steps held the loop for ~35 ms, and every
task ready behind them — a pair's turn, a WebSocket push, the 1 ms ticker of the stall bench —
waited that long (issue 24 item 18). `RoundAdmission` lets `ADMIT_PER_ROUND` requests start
per round and the rest in the rounds after, first come first served: each waits a round or a
few, which is far less than all of them holding one round together.
"""

from __future__ import annotations

import asyncio
import collections

ADMIT_PER_ROUND = 16


class RoundAdmission:
    """`await admission.admit()` returns at once on a quiet server, else in a later round, in
    arrival order. A waiter that is cancelled (its client went away) gives up its place.

    Rounds cannot be seen from inside the loop, only marked: a callback scheduled now runs in
    the next round, after whatever was ready before it. So a request is let in at once only
    while no such mark is pending (nothing was let in lately); every other one waits, and the
    mark's callback wakes up to `per_round` waiters, which then run together in the round
    after it — nothing else is let in in that round, and the mark stays one round more."""

    def __init__(self, per_round: int = ADMIT_PER_ROUND) -> None:
        self.per_round = per_round
        self._let_in = 0  # since the last mark's callback: at once, or woken for the next round
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._marked = False

    async def admit(self) -> None:
        if not self._marked:
            self._let_in = 1
            self._mark()
            return
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        await future

    def _mark(self) -> None:
        self._marked = True
        asyncio.get_running_loop().call_soon(self._next_round)

    def _next_round(self) -> None:
        before, self._let_in = self._let_in, 0
        while self._waiting and self._let_in < self.per_round:
            future = self._waiting.popleft()
            if not future.done():
                future.set_result(None)  # it runs in the next round, with the others woken
                self._let_in += 1
        self._marked = False
        # Those let in before (they run in this round) or just now (the next) keep the mark
        # up, so no one is let in at once beside them.
        if self._waiting or self._let_in or before:
            self._mark()
