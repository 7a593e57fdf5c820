"""How the event loop fares while something runs, for every bench that watches it.

- the **stall**: the longest single callback (one task step that keeps every other task
  waiting), timed on the loop thread's CPU clock (`Callbacks`);
- the **lag**: how late a 1 ms ticker wakes (`Ticks`) — the queueing delay behind everything
  else that was ready, plus, on a shared machine, time the OS gave to other processes (the
  loop thread's wait for a CPU is read from Linux's schedstat and shown with the worst
  tick), plus time the thread was off the CPU otherwise (a blocking call, the GIL). design
  §10 holds it ≤ 20 ms with 200 pairs, during a backup and during any export;
- the **collections**: every run of the garbage collector (`Collections`), with its
  generation, its duration and the thread it ran on — a full collection stops every thread
  (it holds the GIL), so one on any thread is a lag of the loop.

    async with watching() as watch:
        await something()
    print(watch.stall_line()); print(watch.lag_line("during the backup"))
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

from bench.percentiles import percentile

LAG_TARGET_MS = 20.0
STALL_TARGET_MS = 20.0


@contextlib.contextmanager
def _run_queue_clock() -> Iterator[Callable[[], float] | None]:
    """The calling thread's total wait for a CPU so far, in ms (Linux schedstat), or None."""
    try:
        schedstat = open("/proc/thread-self/schedstat", "rb", buffering=0)  # noqa: SIM115
    except OSError:
        yield None
        return

    def waited() -> float:
        schedstat.seek(0)
        return int(schedstat.read().split()[1]) / 1e6

    with schedstat:
        yield waited


class Ticks:
    """How late the loop wakes a 1 ms sleeper: `wall` (what a waiting task feels: everything
    else that was ready ran first, plus time the OS gave to other processes on a shared
    machine), `cpu` (the loop thread's own CPU time in that interval) and `queued` (its wait
    for a CPU in that interval; empty where the OS does not tell). The rest of a tick the
    thread was off the CPU for another reason: blocked in a call, waiting for the GIL, or
    asleep in the selector and woken late."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.queued: list[float] = []

    async def run(self, stop: asyncio.Event) -> None:
        with _run_queue_clock() as run_queue:
            while not stop.is_set():
                started, cpu_started = time.perf_counter(), time.thread_time()
                queued_before = run_queue() if run_queue else 0.0
                await asyncio.sleep(0.001)
                self.wall.append((time.perf_counter() - started - 0.001) * 1000)
                self.cpu.append((time.thread_time() - cpu_started) * 1000)
                if run_queue:
                    self.queued.append(run_queue() - queued_before)

    def worst(self) -> str:
        """The worst tick, split into the loop thread's CPU, its wait for a CPU, the rest."""
        if not self.wall:
            return "no ticks"
        i = max(range(len(self.wall)), key=self.wall.__getitem__)
        wall, cpu = self.wall[i], self.cpu[i]
        if not self.queued:
            return f"worst tick {wall:.1f} ms: {cpu:.1f} ms the loop thread's CPU"
        queued = self.queued[i]
        other = max(0.0, wall + 1 - cpu - queued)  # the tick's interval: its 1 ms sleep + lag
        return (f"worst tick {wall:.1f} ms: {cpu:.1f} ms the loop thread's CPU, {queued:.1f} ms "
                f"waiting for a CPU, {other:.1f} ms off the CPU otherwise (blocked in a call, "
                f"waiting for the GIL, or woken late)")


class Callbacks:
    """The stall proper: how long single event-loop callbacks (one task step each) run.

    Wraps `asyncio.Handle._run` while active and keeps the longest callbacks, wall and
    loop-thread CPU time, with the task they belong to.
    """

    def __init__(self) -> None:
        self.longest: list[tuple[float, float, str]] = []  # (cpu ms, wall ms, what)
        self._original = asyncio.events.Handle._run

    def __enter__(self) -> Callbacks:
        original, longest = self._original, self.longest

        def timed(handle: asyncio.events.Handle) -> None:
            cpu, wall = time.thread_time(), time.perf_counter()
            original(handle)
            took = (time.perf_counter() - wall) * 1000
            if took > 2.0:
                owner = getattr(handle._callback, "__self__", None)  # noqa: SLF001
                what = (f"{owner.get_name()} {owner.get_coro().__qualname__}"
                        if isinstance(owner, asyncio.Task)
                        else repr(handle._callback)[:60])  # noqa: SLF001
                longest.append(((time.thread_time() - cpu) * 1000, took, what))

        asyncio.events.Handle._run = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.events.Handle._run = self._original  # type: ignore[method-assign]
        self.longest.sort(reverse=True)


class Collections:
    """Every garbage collection while active: (generation, wall ms, thread name)."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, float, str]] = []
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.runs.append((info["generation"], (time.perf_counter() - self._started) * 1000,
                              threading.current_thread().name))

    def __enter__(self) -> Collections:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def line(self) -> str:
        """How many collections of each generation, and the longest (where it ran)."""
        parts = []
        for generation in (0, 1, 2):
            runs = [r for r in self.runs if r[0] == generation]
            if runs:
                longest = max(runs, key=lambda r: r[1])
                parts.append(f"gen{generation} ×{len(runs)} (longest {longest[1]:.1f} ms, "
                             f"on {longest[2]})")
        return "garbage collections: " + ("; ".join(parts) or "none")


@dataclass(slots=True)
class Watch:
    ticks: Ticks = field(default_factory=lambda: Ticks())
    callbacks: Callbacks = field(default_factory=lambda: Callbacks())
    collections: Collections = field(default_factory=lambda: Collections())

    @property
    def stall_ms(self) -> float:
        """The longest callback's loop-thread CPU time."""
        return self.callbacks.longest[0][0] if self.callbacks.longest else 0.0

    @property
    def lag_max_ms(self) -> float:
        return max(self.ticks.wall, default=0.0)

    def stall_line(self) -> str:
        cpu, wall, what = self.callbacks.longest[0] if self.callbacks.longest else (0, 0, "-")
        met = "met" if cpu <= STALL_TARGET_MS else "NOT met"
        return (f"stall (longest callback): {cpu:.1f} ms CPU, {wall:.1f} ms wall ({what}); "
                f"target ≤ {STALL_TARGET_MS:.0f} ms: {met}")

    def lag_line(self, when: str) -> str:
        """The lag (wall), and how much of the worst tick was the loop thread's own work
        (its CPU time; the rest is waiting: for the GIL, or for a CPU on a busy machine)."""
        wall = self.ticks.wall
        met = "met" if self.lag_max_ms <= LAG_TARGET_MS else "NOT met"
        return (f"loop lag {when} (1 ms ticker, {len(wall)} ticks): "
                f"p50 {percentile(wall, .5):.2f} ms, p99 {percentile(wall, .99):.2f} ms, "
                f"max {self.lag_max_ms:.2f} ms (the loop thread's own CPU in a tick: p99 "
                f"{percentile(self.ticks.cpu, .99):.2f} ms, max "
                f"{max(self.ticks.cpu, default=0.0):.2f} ms; {self.ticks.worst()}); target max "
                f"≤ {LAG_TARGET_MS:.0f} ms: {met}")


@contextlib.asynccontextmanager
async def watching() -> AsyncIterator[Watch]:
    """Ticker and callback timing for the block's duration."""
    watch = Watch()
    stop = asyncio.Event()
    ticker = asyncio.create_task(watch.ticks.run(stop))
    try:
        with watch.callbacks, watch.collections:
            yield watch
    finally:
        stop.set()
        await ticker
