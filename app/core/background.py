"""Background loops: cancelling kept tasks for sure, and the one wakeable ticker.

On Python 3.11, `asyncio.wait_for` (used inside redis-py for socket writes) loses a
cancellation that arrives just as the inner operation completes (CPython gh-86296): the task
carries on to its next await. So a task is cancelled again until it has really ended.

`Ticker` is every periodic loop of the process (the reminder clock, the Pixie worker, the
keeper's heartbeat, marker refresh and orphan sweep, the daily backup): a round runs the
owner's step, then the ticker sleeps until the interval has passed or `wake()` is called.
A step that raises is logged and the loop goes on; only `stop()` ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic, TypeVar

from app.core.log import fields

log = logging.getLogger(__name__)

ROUND_SECONDS = 0.5
MAX_ROUNDS = 20
RETRY_AFTER_FAILURE_SECONDS = 1.0  # the clock's and the worker's pause after a failed round

T = TypeVar("T")


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    pending = {task for task in tasks if not task.done()}
    for _ in range(MAX_ROUNDS):
        if not pending:
            return
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=ROUND_SECONDS)
    log.error(
        "tasks did not end when cancelled",
        extra={"fields": {"tasks": sorted(task.get_name() for task in pending)}},
    )


class Ticker(Generic[T]):
    """One periodic background loop that runs `step` in rounds; `start()` and `stop()` keep
    it in a task of its own, cancelled and awaited (STYLE.md example 2).

    - `interval`: seconds between rounds, or a function of what the step returned (the
      reminder clock's step says how long until its next due reminder);
    - `first_delay`: seconds before the first round (`wake()` cuts it short too);
    - `error_delay`: the sleep after a failed round (default: `interval`; required when
      `interval` is a function, which has no result to look at then).

    Each round logs what the step returned at debug level, and a failure with its traceback,
    the round and when the next one comes. A wake during a round is not lost: the next sleep
    ends at once. `rounds` counts finished rounds, failed ones too; `wait_rounds(n)` waits
    until `n` have finished (tests wait on it instead of sleeping).
    """

    def __init__(
        self,
        name: str,
        step: Callable[[], Awaitable[T]],
        *,
        interval: float | Callable[[T], float],
        first_delay: float = 0.0,
        error_delay: float | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if error_delay is None:
            if callable(interval):
                raise ValueError(f"ticker {name!r}: an interval function needs an error_delay")
            error_delay = interval
        if error_delay <= 0:
            raise ValueError(f"ticker {name!r}: error_delay must be positive (no busy loop)")
        self.name = name
        self.step = step
        self.interval = interval
        self.first_delay = first_delay
        self.error_delay = error_delay
        self.log = logger or log
        self.rounds = 0
        self.failures = 0  # failed rounds in a row
        self._wake = asyncio.Event()
        self._round_done = asyncio.Event()
        self._ended = False
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        """Start the next round now (or as soon as the running one has finished)."""
        self._wake.set()

    async def start(self) -> None:
        """Run the loop in a task of its own, kept until `stop()`."""
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=self.name)

    async def stop(self) -> None:
        """Cancel the loop (a running step with it) and wait until it has ended."""
        if self._task is not None:
            await cancel_and_wait([self._task])
            self._task = None

    async def run(self) -> None:
        """The loop itself, in the caller's task (`start()` gives it one of its own); it ends
        only when that task is cancelled."""
        self._ended = False
        try:
            await self._sleep(self.first_delay)
            while True:
                self._wake.clear()  # before the round: a wake during it is not lost
                await self._sleep(await self._round())
        finally:
            self._ended = True
            self._signal()  # a waiter learns that no round will come

    async def wait_rounds(self, count: int) -> int:
        """Wait until `count` rounds have finished, or the loop has ended; returns how many
        have finished."""
        while self.rounds < count and not self._ended:
            await self._round_done.wait()
        return self.rounds

    async def _round(self) -> float:
        """One step, logged; returns the sleep before the next."""
        started = time.perf_counter()
        number = self.rounds + 1
        try:
            result = await self.step()
        except asyncio.CancelledError:
            raise
        except Exception:
            self.failures += 1
            self.log.exception(
                "background round failed; the loop goes on",
                extra=fields(
                    task=self.name,
                    round=number,
                    failures_in_a_row=self.failures,
                    retry_in_s=self.error_delay,
                ),
            )
            delay = self.error_delay
        else:
            self.failures = 0
            delay = self.interval(result) if callable(self.interval) else self.interval
            if self.log.isEnabledFor(logging.DEBUG):
                self.log.debug(
                    "background round",
                    extra=fields(
                        task=self.name,
                        round=number,
                        result=result,
                        next_in_s=round(delay, 3),
                        ms=round((time.perf_counter() - started) * 1000, 1),
                    ),
                )
        self.rounds = number
        self._signal()
        return delay

    def _signal(self) -> None:
        done, self._round_done = self._round_done, asyncio.Event()
        done.set()

    async def _sleep(self, seconds: float) -> None:
        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow the cancel of stop().
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(seconds, 0.0)):
                await self._wake.wait()
