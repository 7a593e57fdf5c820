"""The memory budget of photo decoding: how many pixels the process decodes at once.

A decoded photo costs about its pixels times four bytes, and a decode makes copies of it (the
upright view, the thumbnail's RGB copy), so three 40-megapixel uploads at once would hold
gigabytes. `PixelBudget` is a weighted semaphore counted in pixels: a decode takes its pixels
before it starts and gives them back when it is done; one that does not fit waits, first come
first served, so a large photo is not passed by small ones forever; past `max_waiting`
waiting, a request is refused (`BudgetFull`) rather than queued with its bytes in memory. It serves threads (an
importer's blocking `acquire`) and event loops (`acquire_async`) alike, because the process
has one budget whichever way a photo comes in (`app.journal.media.DECODE_BUDGET`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator


class _Waiter:
    __slots__ = ("granted", "pixels", "wake")

    def __init__(self, pixels: int, wake: Callable[[], None]) -> None:
        self.pixels = pixels
        self.wake = wake
        self.granted = False


class BudgetFull(RuntimeError):
    """As many requests wait for the budget already as it lets wait."""


class PixelBudget:
    """At most `capacity` pixels held at once; a request above it is held as `capacity`
    (a photo larger than the budget, where one is let through, decodes alone)."""

    def __init__(self, capacity: int, max_waiting: int | None = None) -> None:
        self.capacity = capacity
        self.max_waiting = max_waiting  # None: any number wait
        self._free = capacity
        self._lock = threading.Lock()
        self._waiting: deque[_Waiter] = deque()
        self.peak = 0  # the most pixels held at once since the last `reset_peak`

    @property
    def held(self) -> int:
        return self.capacity - self._free

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.held

    @contextlib.contextmanager
    def hold(self, pixels: int) -> Iterator[None]:
        """Hold `pixels` for the block, waiting (blocking the thread) until they are free."""
        event = threading.Event()
        waiter = self._enqueue(pixels, event.set)
        if waiter is not None:
            event.wait()
        try:
            yield
        finally:
            self._release(pixels)

    @contextlib.asynccontextmanager
    async def hold_async(self, pixels: int) -> AsyncIterator[None]:
        """Hold `pixels` for the block, waiting on the loop (no thread blocked) until they
        are free; a task cancelled while it waits takes nothing."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            loop.call_soon_threadsafe(_settle, future)

        waiter = self._enqueue(pixels, wake)
        if waiter is not None:
            try:
                await future
            except BaseException:
                self._withdraw(waiter)
                raise
        try:
            yield
        finally:
            self._release(pixels)

    def _enqueue(self, pixels: int, wake: Callable[[], None]) -> _Waiter | None:
        """Take the pixels now (None) or queue a waiter that `wake` tells when it has them."""
        pixels = min(pixels, self.capacity)
        with self._lock:
            if not self._waiting and pixels <= self._free:
                self._take(pixels)
                return None
            if self.max_waiting is not None and len(self._waiting) >= self.max_waiting:
                raise BudgetFull(f"{len(self._waiting)} decodes wait already")
            waiter = _Waiter(pixels, wake)
            self._waiting.append(waiter)
            return waiter

    def _withdraw(self, waiter: _Waiter) -> None:
        """A waiter that gave up: out of the queue, or its grant handed back."""
        with self._lock:
            granted = waiter.granted
            if not granted:
                self._waiting.remove(waiter)
        if granted:
            self._release(waiter.pixels)
        else:
            self._grant_waiting()

    def _release(self, pixels: int) -> None:
        with self._lock:
            self._free += min(pixels, self.capacity)
        self._grant_waiting()

    def _grant_waiting(self) -> None:
        woken = []
        with self._lock:
            while self._waiting and self._waiting[0].pixels <= self._free:
                waiter = self._waiting.popleft()
                waiter.granted = True
                self._take(waiter.pixels)
                woken.append(waiter)
        for waiter in woken:
            try:
                waiter.wake()
            except RuntimeError:  # its event loop is closed: nobody takes the pixels
                self._release(waiter.pixels)

    def _take(self, pixels: int) -> None:
        self._free -= pixels
        self.peak = max(self.peak, self.held)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
