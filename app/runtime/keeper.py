"""The process's housekeeping loops: each periodic one a `Ticker`, the wake listener a kept
task; all cancelled and awaited on shutdown.

- heartbeat: ``heartbeat:{instance}`` is set every `heartbeat_seconds` with a TTL of three
  periods; a marker or turn whose owner has no heartbeat is stale. A beat that finds its own
  heartbeat gone, or this process unlisted, logs a warning naming the process: it was
  declared dead while alive (a stalled loop under load, a short period), and others may have
  recovered its turns — their late results are fenced off (`app.runtime.recovery`) — and
  its run slots were dropped as a dead holder's: the beat puts back those it still holds
  (`RedisSlots.refresh`), so the endpoint's count is true again;
- marker refresh: every `turn_marker_refresh_seconds` each marker this process holds gets
  its TTL back (compare-and-expire), so only a turn nobody runs hits the emergency brake;
  run-slot leases (multi-process mode) are extended in the same beat;
- with an external Redis: a wake listener (pub/sub) that starts the consumer of a pair
  another process accepted input for, and the death watch: every process lists itself in
  `keys.instances()`, and the watch sleeps until the next heartbeat of another process
  could expire (its PTTL, at most one heartbeat period), looks, and for a process whose
  heartbeat is gone frees the run slots at once (the slots' pumps look again; the slot
  script drops a dead holder) and runs the orphan sweep, which recovers its turns and
  clears its markers. So recovery begins when the heartbeat expires, not up to a sweep
  period later (issue 26). The periodic orphan sweep (every three heartbeat periods) stays
  as the net for a process that died before it was listed.

The keeper is handed what it uses: the pair lock and the run slots it refreshes, and, with an
external Redis, `wake_pair` (start a pair's consumer) and `sweep_orphans` (`Runtime.recover`
for dead owners).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis

from app.core.background import Ticker, cancel_and_wait
from app.core.log import fields
from app.core.settings import Settings
from app.memory import keys

if TYPE_CHECKING:
    from app.runtime.markers import PairLocks
    from app.runtime.slots import LocalSlots

log = logging.getLogger(__name__)

HEARTBEAT_PERIODS_TO_LIVE = 3
# The death watch looks this long after a heartbeat's PTTL ran out (Redis expires the key on
# the next access at the latest, so the look sees it gone).
EXPIRY_MARGIN_SECONDS = 0.02


async def heartbeat_gone(redis: aioredis.Redis, instance: str) -> bool:
    """Whether the process `instance` is dead: its heartbeat has expired (or never was).
    The one test of it — for turns and markers (recovery) and for journal jobs (the wiring
    hands it to them)."""
    return not await redis.exists(keys.heartbeat(instance))


class Keeper:
    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        settings: Settings,
        instance_id: str,
        locks: PairLocks,
        slots: LocalSlots,
        wake_pair: Callable[[str], None] | None = None,
        sweep_orphans: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.redis = redis
        self.settings = settings
        self.instance_id = instance_id
        self.locks = locks
        self.slots = slots
        # With an external Redis: start the consumer of a pair another process accepted
        # input for; recover the turns of processes whose heartbeat has gone.
        self.wake_pair = wake_pair
        self.sweep_orphans = sweep_orphans
        self.tickers: list[Ticker[Any]] = []
        self._listener: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._sweeping = asyncio.Lock()  # one orphan sweep at a time in this process
        self._beaten = False  # the first beat registers; a later one finds what it left

    async def start(self) -> None:
        await self.beat()
        settings = self.settings
        steps: list[tuple[str, Callable[[], Awaitable[Any]], float]] = [
            ("heartbeat", self.beat, settings.heartbeat_seconds),
            ("marker-refresh", self.refresh_markers, settings.turn_marker_refresh_seconds),
        ]
        if self.sweep_orphans is not None:
            steps.append(
                ("orphan-sweep", self.sweep, settings.heartbeat_seconds * HEARTBEAT_PERIODS_TO_LIVE)
            )
            self._watch = asyncio.create_task(self._watch_deaths(), name="death-watch")
        if self.wake_pair is not None:
            self._listener = asyncio.create_task(self._wake_loop(), name="wake-listener")
        # Each step first runs one period after the start (the heartbeat was just written); a
        # failed step is retried the next period.
        self.tickers = [
            Ticker(name, step, interval=seconds, first_delay=seconds, logger=log)
            for name, step, seconds in steps
        ]
        for ticker in self.tickers:
            await ticker.start()

    async def stop(self) -> None:
        for ticker in self.tickers:
            await ticker.stop()
        await cancel_and_wait([task for task in (self._listener, self._watch) if task is not None])
        self._listener = self._watch = None
        with contextlib.suppress(aioredis.RedisError, OSError):
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.delete(keys.heartbeat(self.instance_id))
                pipe.srem(keys.instances(), self.instance_id)
                await pipe.execute()

    async def beat(self) -> None:
        settings = self.settings
        ttl = max(1, int(settings.heartbeat_seconds * HEARTBEAT_PERIODS_TO_LIVE))
        heartbeat = keys.heartbeat(self.instance_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.exists(heartbeat)
            pipe.set(heartbeat, "alive", ex=ttl)
            pipe.sadd(keys.instances(), self.instance_id)
            had_heartbeat, _, added = await pipe.execute()
        declared_dead = self._beaten and (not had_heartbeat or bool(added))
        self._beaten = True
        if declared_dead:
            log.warning(
                "this process was declared dead while alive; its turns may have been "
                "recovered elsewhere",
                extra=fields(
                    instance=self.instance_id,
                    heartbeat_lapsed=not had_heartbeat,
                    unlisted=bool(added),
                    period_s=settings.heartbeat_seconds,
                    setting="heartbeat_seconds",
                ),
            )
            # Others dropped its run slots as a dead holder's; its runs still use them.
            await self.slots.refresh()

    async def sweep(self) -> None:
        """The orphan sweep (`Runtime.recover` for dead owners), one at a time."""
        assert self.sweep_orphans is not None
        async with self._sweeping:
            await self.sweep_orphans()

    async def look_for_deaths(self) -> float:
        """One look of the death watch: processes listed in `keys.instances()` whose
        heartbeat is gone are unlisted, their slots freed and their turns recovered. Returns
        the seconds until the next heartbeat could expire (one period at most)."""
        period = self.settings.heartbeat_seconds
        others = sorted(
            set(keys.texts(await self.redis.smembers(keys.instances()))) - {self.instance_id}
        )
        async with self.redis.pipeline(transaction=False) as pipe:
            for instance in others:
                pipe.pttl(keys.heartbeat(instance))
            ttls = await pipe.execute() if others else []
        dead = [instance for instance, ttl in zip(others, ttls, strict=True) if ttl == -2]
        if dead:
            await self.redis.srem(keys.instances(), *dead)
            log.warning(
                "processes without a heartbeat; recovering what they held", extra=fields(dead=dead)
            )
            self.slots.wake()
            await self.sweep()
        left = [ttl / 1000 for ttl in ttls if ttl > 0]
        return min([period, *left]) + EXPIRY_MARGIN_SECONDS

    async def _watch_deaths(self) -> None:
        while True:
            try:
                wait = await self.look_for_deaths()
            except (aioredis.RedisError, OSError):
                log.exception("death watch failed; looking again")
                wait = self.settings.heartbeat_seconds
            except Exception:
                log.exception("orphan sweep after a death failed; looking again")
                wait = self.settings.heartbeat_seconds
            await asyncio.sleep(wait)

    async def refresh_markers(self) -> None:
        await self.locks.refresh_held()
        await self.slots.refresh()

    async def _wake_loop(self) -> None:
        assert self.wake_pair is not None
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(keys.wake_channel())
        try:
            async for item in pubsub.listen():
                pair = item["data"]
                if isinstance(pair, str):
                    self.wake_pair(pair)
        finally:
            await pubsub.aclose()
