"""The run lock: at most `graph_slots` pipeline runs at a time (SPEC §5, seed 001 §7.2).

Waiting for a slot never blocks the event loop, and it is bounded: after
`lock_wait_timeout` seconds `SlotTimeout` is raised and the runtime fails the turn with a
notice (never drops it). A slot is always released by the `async with` that took it, also
when the run is cancelled.

- `LocalSlots`: an `asyncio.Semaphore` (one process, the embedded Redis).
- `RedisSlots`: with an external Redis several processes share one GPU budget. The slots are
  a sorted set (holder → lease expiry) managed by a Lua script; the keeper refreshes a
  holder's lease while it runs (`lease_seconds` is three refresh periods). A holder names
  its process instance, and a slot whose process has no heartbeat left is free: after a
  crash the slot frees with the heartbeat (≈ 3 heartbeat periods), not with the lease. A process first takes one of
  its local permits (so its own waiters queue in the event loop, not in Redis), then polls
  the shared set every `POLL_SECONDS` (seed 001 §7.2: 0.05 s) until a slot is free.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import AsyncIterator

import redis.asyncio as aioredis

from app.memory import keys

POLL_SECONDS = 0.05

# KEYS: slots · ARGV: now, slots, lease expiry, holder, heartbeat key prefix ('' = none).
# A holder is "<instance>/<id>"; one whose instance has no heartbeat left is free at once
# (its process died: waiting out its lease would hold the GPU budget for nothing).
ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if ARGV[5] ~= '' then
  for _, holder in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    local instance = string.match(holder, '^(.-)/')
    if instance and redis.call('EXISTS', ARGV[5] .. instance) == 0 then
      redis.call('ZREM', KEYS[1], holder)
    end
  end
end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  return 1
end
return 0
"""


class SlotTimeout(Exception):
    """No run slot became free within `lock_wait_timeout`."""

    def __init__(self, waited: float) -> None:
        super().__init__(f"no run slot free after {waited:.1f} s")
        self.waited = waited


class LocalSlots:
    def __init__(self, slots: int, timeout: float) -> None:
        self.slots = slots
        self.timeout = timeout
        self._semaphore = asyncio.Semaphore(slots)

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        start = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout):
                await self._semaphore.acquire()
        except TimeoutError:
            raise SlotTimeout(time.monotonic() - start) from None
        try:
            yield
        finally:
            self._semaphore.release()

    @contextlib.asynccontextmanager
    async def hold_when_free(self) -> AsyncIterator[None]:
        """Lowest priority (the Pixie worker): wait, without a time limit, until a slot is
        free and no run waits for one, then hold it like `hold`. A run that starts waiting
        meanwhile gets the next free slot; it waits at most for what the holder does."""
        while self._semaphore.locked() or self.waiting:
            await asyncio.sleep(POLL_SECONDS)
        # No await between the check and the acquire: nobody can slip in between.
        async with self.hold():
            yield

    @property
    def waiting(self) -> int:
        """Runs waiting for a local slot now."""
        return len(self._semaphore._waiters or ())  # noqa: SLF001 - read-only gauge

    async def refresh(self) -> None:
        """Local permits have no lease."""

    @property
    def in_use(self) -> int:
        return self.slots - self._semaphore._value  # noqa: SLF001 - read-only gauge


class RedisSlots(LocalSlots):
    def __init__(self, redis: aioredis.Redis, slots: int, timeout: float,
                 lease_seconds: float, instance_id: str | None = None) -> None:
        super().__init__(slots, timeout)
        self.redis = redis
        self.lease_seconds = lease_seconds
        # Bound to this process's heartbeat (`keys.heartbeat`), a slot is free as soon as the
        # heartbeat of the process holding it has expired, not only when its lease runs out.
        self.instance_id = instance_id
        self._heartbeat_prefix = keys.heartbeat("") if instance_id else ""
        self._acquire = redis.register_script(ACQUIRE)
        self._held: set[str] = set()

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        start = time.monotonic()
        async with super().hold():
            holder = (f"{self.instance_id}/{uuid.uuid4().hex}" if self.instance_id
                      else uuid.uuid4().hex)
            remaining = self.timeout - (time.monotonic() - start)
            try:
                async with asyncio.timeout(max(remaining, 0.001)):
                    await self._take(holder)
            except TimeoutError:
                raise SlotTimeout(time.monotonic() - start) from None
            self._held.add(holder)
            try:
                yield
            finally:
                self._held.discard(holder)
                await asyncio.shield(self.redis.zrem(keys.run_slots(), holder))

    async def _take(self, holder: str) -> None:
        while True:
            now = time.time()
            took = await self._acquire(keys=[keys.run_slots()],
                                       args=[now, self.slots, now + self.lease_seconds, holder,
                                             self._heartbeat_prefix])
            if took:
                return
            await asyncio.sleep(POLL_SECONDS * (0.5 + random.random()))

    async def refresh(self) -> None:
        """Extend the leases of the slots this process holds (called by the keeper)."""
        expiry = time.time() + self.lease_seconds
        for holder in list(self._held):
            await self.redis.zadd(keys.run_slots(), {holder: expiry}, xx=True)
