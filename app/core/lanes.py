"""Two lanes on one event loop: what a person waits for first, the turns' work after it.

design §0: sending never waits for the model — nor for the other pairs' orchestration. On one
asyncio loop every ready callback of a round runs before the loop looks at its sockets
again, so under a burst an accept's Redis reply, read at once by the selector, waited behind
a round full of pair workers' steps (the burst bench: 1 000 pairs, the accept's first reply
15–20 ms behind its send while Redis answered another process's PING in p99 2 ms).

`LaneLoop` keeps the callbacks of tasks started with `in_background` (the pair workers and
everything they start; the context variable `BACKGROUND` travels with a task's context) in a
queue of their own, and runs them from one callback of the normal lane per round, for at most
`BACKGROUND_SLICE` of the loop's time; what is left runs in the next round, after the
selector has been asked again. The normal lane (requests, sockets, timers, the I/O callbacks
themselves) runs as asyncio runs it. Within each lane the order is asyncio's (first come,
first run); background work is never starved: every round runs at least one of its callbacks.

The server (`lanes.run`), `bench/runtime.py` and every async test run on a `LaneLoop`; on a
plain asyncio loop `in_background` starts an ordinary task. The lanes change when work runs,
never what it does.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, TypeVarTuple, Unpack

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "novaberg_background", default=False
)
# The loop time one round gives the background lane: short enough that a reply for a
# request waits at most about this long behind the turns, long enough that the slice's own
# hop (one callback per round) costs nothing next to it.
BACKGROUND_SLICE = 0.002


def in_background(coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
    """A task whose steps (and those of the tasks it starts) run in the background lane."""
    context = contextvars.copy_context()
    context.run(BACKGROUND.set, True)
    return asyncio.get_running_loop().create_task(coro, name=name, context=context)


class LaneLoop(asyncio.SelectorEventLoop):
    """asyncio's selector loop with a background lane (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._background: collections.deque[asyncio.Handle] = collections.deque()
        self._slice_scheduled = False
        self._slice_context = contextvars.Context()  # the slice itself is normal-lane work

    def call_soon(
        self,
        callback: Callable[[Unpack[Ts]], object],
        *args: *Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        background = context.get(BACKGROUND, False) if context is not None else BACKGROUND.get()
        if not background:
            return super().call_soon(callback, *args, context=context)
        if self.is_closed():  # as asyncio's own call_soon refuses
            raise RuntimeError("Event loop is closed")
        if self.get_debug():
            self._check_thread()  # type: ignore[attr-defined]  # asyncio's private debug check
        handle = asyncio.Handle(callback, args, self, context)
        self._background.append(handle)
        if not self._slice_scheduled:
            self._slice_scheduled = True
            super().call_soon(self._run_background_slice, context=self._slice_context)
        return handle

    def background_waiting(self) -> int:
        """Callbacks waiting in the background lane."""
        return len(self._background)

    def _run_background_slice(self) -> None:
        deadline = time.perf_counter() + BACKGROUND_SLICE
        waiting = self._background
        while waiting:
            handle = waiting.popleft()
            if not handle.cancelled():
                handle._run()  # noqa: SLF001 - how asyncio's own loop runs a ready handle
            if time.perf_counter() >= deadline:
                break
        if waiting:  # the next round, after the selector has been asked again
            super().call_soon(self._run_background_slice, context=self._slice_context)
        else:
            self._slice_scheduled = False


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` on a `LaneLoop`."""
    with asyncio.Runner(loop_factory=LaneLoop) as runner:
        return runner.run(main)
