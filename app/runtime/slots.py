"""The run lock: at most `graph_slots` pipeline runs at a time per model endpoint (design §5,
seed 001 §7.2; issue 26 item 4).

Slots belong to a model endpoint (the base URL of the model server, `Gateway.endpoint`): the
GPU behind it is what is scarce. Processes that share a model server share its slots;
processes with a model server of their own each have their own; the offline model (no
endpoint, `None`) runs in the process and has slots of this process only.

Waiting for a slot never blocks the event loop, never polls, and is bounded: after
`lock_wait_timeout` seconds `SlotTimeout` is raised and the caller fails the turn with the
`lock_timeout` notice (never drops it). A slot is always released by the `async with` that
took it, also when the run is cancelled.

- In the process the waiters of an endpoint form a FIFO queue of futures: a released slot is
  handed to the first waiter that still waits (no wake-up of anyone else).
- `LocalSlots`: the slots of every endpoint are this process's (the embedded Redis: one
  process owns the data dir).
- `RedisSlots` (external Redis, several processes): the slots of an endpoint with a URL are
  a sorted set in Redis (`keys.run_slots(endpoint)`: holder → lease expiry), taken by a Lua
  script; the keeper refreshes a holder's lease while it runs (`lease_seconds`, three
  refresh periods). A holder names its process ("<instance>/<id>"), and a slot whose
  process has no heartbeat left is free at once. A process declared dead while alive puts
  the slots of its runs back on its next beat (`RedisSlots.refresh`); a holder is unique,
  so a release by a holder whose entry was dropped frees nobody else's slot. Only the
  first local waiter of an endpoint asks Redis (one pump task per endpoint and process);
  across processes they queue fairly in `keys.run_slot_queue(endpoint)`, one ticket per
  process that waits: a free slot goes to the process at the head, which goes to the back
  if it has more waiters (round robin, so no process starves another). A release publishes
  the endpoint on `keys.slot_channel()`; every process's listener wakes its pump for that
  endpoint. A lost notification cannot stall: a pump that waits looks again after
  `RECHECK_SECONDS` at the latest.

One module: the local and the Redis run lock are two implementations of one contract.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator

import redis.asyncio as aioredis

from app.core.background import cancel_and_wait
from app.core.log import fields
from app.memory import keys

log = logging.getLogger(__name__)

# The longest a waiting pump trusts the release notifications: it asks Redis again after
# this even without one (a lost pub/sub message, a holder that died without releasing).
RECHECK_SECONDS = 1.0
ERROR_BACKOFF_SECONDS = 0.5
LOCAL = None  # the endpoint of a model with no server (the offline model): this process's

# KEYS: slots, queue · ARGV: now, slots, lease expiry, holder, heartbeat key prefix,
# instance, more waiters here (1/0), lowest priority (1/0: take only when no process waits).
# Leases that ran out and holders and tickets of processes without a heartbeat go first (a
# dead process is waited out by nobody). Then the slot goes to this instance if a slot is
# free for it: its ticket is among the first `free`, or it has none and fewer processes than
# free slots wait. A process that waits and gets nothing keeps (or gets) its ticket.
ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for _, holder in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local instance = string.match(holder, '^(.-)/')
  if instance and redis.call('EXISTS', ARGV[5] .. instance) == 0 then
    redis.call('ZREM', KEYS[1], holder)
  end
end
local queue = redis.call('LRANGE', KEYS[2], 0, -1)
local live = {}
local position = nil
for _, ticket in ipairs(queue) do
  if redis.call('EXISTS', ARGV[5] .. ticket) == 0 then
    redis.call('LREM', KEYS[2], 0, ticket)
  else
    table.insert(live, ticket)
    if ticket == ARGV[6] then position = #live end
  end
end
local free = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1])
local allowed
if ARGV[8] == '1' then
  allowed = free > 0 and #live == 0
elseif position then
  allowed = position <= free
else
  allowed = #live < free
end
if allowed then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  if position then redis.call('LREM', KEYS[2], 0, ARGV[6]) end
  if ARGV[7] == '1' then redis.call('RPUSH', KEYS[2], ARGV[6]) end
  return 1
end
if ARGV[8] ~= '1' and not position then redis.call('RPUSH', KEYS[2], ARGV[6]) end
return 0
"""

# KEYS: slots · ARGV: holder, channel, endpoint.
RELEASE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return 1
"""


class SlotTimeout(Exception):
    """No run slot became free within `lock_wait_timeout`."""

    def __init__(self, waited: float) -> None:
        super().__init__(f"no run slot free after {waited:.1f} s")
        self.waited = waited


class _Waiters:
    """One endpoint's waiters in this process, first come first served; `lowest` are the
    lowest-priority waiters (the Pixie worker), served only when no other waits."""

    def __init__(self) -> None:
        self.queue: deque[asyncio.Future[str]] = deque()
        self.lowest: deque[asyncio.Future[str]] = deque()

    def add(self, lowest: bool) -> asyncio.Future[str]:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        (self.lowest if lowest else self.queue).append(future)
        return future

    def first(self) -> bool | None:
        """Whether the waiter a free slot goes to next is of the lowest priority; None when
        nobody waits."""
        for line in (self.queue, self.lowest):
            while line and line[0].done():  # gone (timed out, cancelled)
                line.popleft()
        if self.queue:
            return False
        if self.lowest:
            return True
        return None

    def grant(self, holder: str) -> bool:
        """Hand `holder` to the first waiter; False when nobody waits."""
        lowest = self.first()
        if lowest is None:
            return False
        (self.lowest if lowest else self.queue).popleft().set_result(holder)
        return True

    @property
    def runs(self) -> int:
        """Runs (not the lowest priority) waiting."""
        return sum(not f.done() for f in self.queue)

    @property
    def more(self) -> bool:
        """More than one waits (the one served now and at least one after it)."""
        return sum(not f.done() for f in (*self.queue, *self.lowest)) > 1


class _Group:
    """One endpoint's slots as this process sees them: its waiters and how many it holds."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.waiters = _Waiters()
        self.in_use = 0

    async def acquire(self, *, lowest: bool, timeout: float | None) -> str:
        start = time.monotonic()
        future = self.waiters.add(lowest)
        self.arrived()
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.shield(future)
        except (TimeoutError, asyncio.CancelledError) as exc:
            if future.done() and not future.cancelled():
                # Granted in the same step as the timeout or the cancel: hand it on.
                await asyncio.shield(self.release(future.result()))
            else:
                future.cancel()
            if isinstance(exc, TimeoutError):
                raise SlotTimeout(time.monotonic() - start) from None
            raise

    def arrived(self) -> None:
        """A waiter joined: serve it now if a slot is free."""
        if self.in_use < self.slots and self.waiters.grant(""):
            self.in_use += 1

    async def release(self, holder: str) -> None:
        """Hand the slot to the first waiter, or free it."""
        if not self.waiters.grant(holder):
            self.in_use -= 1

    def wake(self) -> None:
        """Nothing to look at again: a local slot frees only by its release."""

    async def close(self) -> None:
        """Nothing runs for a local group."""


class LocalSlots:
    """Every endpoint's slots are this process's."""

    def __init__(self, slots: int, timeout: float) -> None:
        self.slots = slots
        self.timeout = timeout
        self._groups: dict[str | None, _Group] = {}

    @contextlib.asynccontextmanager
    async def hold(self, endpoint: str | None = LOCAL) -> AsyncIterator[None]:
        """Hold one of `endpoint`'s slots; `SlotTimeout` after `lock_wait_timeout`."""
        group = self.group(endpoint)
        holder = await group.acquire(lowest=False, timeout=self.timeout)
        try:
            yield
        finally:
            await asyncio.shield(group.release(holder))

    @contextlib.asynccontextmanager
    async def hold_when_free(self, endpoint: str | None = LOCAL) -> AsyncIterator[None]:
        """Lowest priority (the Pixie worker): wait, without a time limit, until a slot is
        free and no run waits for one, then hold it like `hold`. A run that starts waiting
        meanwhile gets the next free slot; it waits at most for what the holder does."""
        group = self.group(endpoint)
        holder = await group.acquire(lowest=True, timeout=None)
        try:
            yield
        finally:
            await asyncio.shield(group.release(holder))

    def group(self, endpoint: str | None) -> _Group:
        group = self._groups.get(endpoint)
        if group is None:
            group = self._groups[endpoint] = self._new_group(endpoint)
        return group

    def _new_group(self, endpoint: str | None) -> _Group:
        return _Group(self.slots)

    async def start(self) -> None:
        """Local slots need nothing running."""

    async def stop(self) -> None:
        for group in self._groups.values():
            await group.close()

    async def refresh(self) -> None:
        """Local permits have no lease."""

    def wake(self) -> None:
        """Look again at once: a process died, its slots may be free."""
        for group in self._groups.values():
            group.wake()

    @property
    def waiting(self) -> int:
        """Runs waiting for a slot now, every endpoint (the lowest priority not counted)."""
        return sum(g.waiters.runs for g in self._groups.values())

    @property
    def in_use(self) -> int:
        """Slots this process holds now, every endpoint."""
        return sum(g.in_use for g in self._groups.values())


class _RedisGroup(_Group):
    """An endpoint's slots shared through Redis. `in_use` counts what this process holds."""

    def __init__(self, owner: RedisSlots, endpoint: str) -> None:
        super().__init__(owner.slots)
        self.owner = owner
        self.endpoint = endpoint
        self.slots_key = keys.run_slots(endpoint)
        self.queue_key = keys.run_slot_queue(endpoint)
        self.held: set[str] = set()
        self._wake = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self._ticket = False  # this process may have a ticket in the Redis queue

    def arrived(self) -> None:
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._serve(), name=f"run-slots:{self.endpoint}")
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    async def release(self, holder: str) -> None:
        self.held.discard(holder)
        self.in_use -= 1
        await self.owner.redis_release(self, holder)
        self._wake.set()  # this process's next waiter asks too (the ticket order decides)

    async def _serve(self) -> None:
        """Ask Redis for the first waiter until nobody waits here; between two asks wait for
        a release notification, `RECHECK_SECONDS` at most."""
        while True:
            lowest = self.waiters.first()
            if lowest is None:
                if self._ticket:
                    self._ticket = False
                    with contextlib.suppress(aioredis.RedisError, OSError):
                        await self.owner.redis.lrem(self.queue_key, 0, self.owner.instance_id)
                    continue  # someone may have come meanwhile
                return
            holder = f"{self.owner.instance_id}/{uuid.uuid4().hex}"
            self._wake.clear()  # a release from now on is not missed
            try:
                took = await self.owner.redis_acquire(
                    self, holder, more=self.waiters.more, lowest=lowest
                )
            except (aioredis.RedisError, OSError):
                log.exception("run slot request failed; asking again")
                await asyncio.sleep(ERROR_BACKOFF_SECONDS)
                continue
            if not lowest:
                self._ticket = True
            if took:
                self.held.add(holder)
                self.in_use += 1
                if not self.waiters.grant(holder):  # the waiter went meanwhile
                    await self.release(holder)
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RECHECK_SECONDS):
                    await self._wake.wait()

    async def close(self) -> None:
        if self._pump is not None:
            await cancel_and_wait([self._pump])


class RedisSlots(LocalSlots):
    """Slots of endpoints with a URL are shared through Redis; the offline model's are
    this process's."""

    def __init__(
        self,
        redis: aioredis.Redis,
        slots: int,
        timeout: float,
        lease_seconds: float,
        instance_id: str,
    ) -> None:
        super().__init__(slots, timeout)
        self.redis = redis
        self.lease_seconds = lease_seconds
        # A holder or a ticket of a process without a heartbeat (`keys.heartbeat`) is gone.
        self.instance_id = instance_id
        self._acquire = redis.register_script(ACQUIRE)
        self._release = redis.register_script(RELEASE)
        self._listener: asyncio.Task[None] | None = None

    def _new_group(self, endpoint: str | None) -> _Group:
        return _Group(self.slots) if endpoint is LOCAL else _RedisGroup(self, endpoint)

    async def start(self) -> None:
        """Listen for releases of every process (`keys.slot_channel()`)."""
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(keys.slot_channel())
        self._listener = asyncio.create_task(self._listen(pubsub), name="run-slots-listener")

    async def stop(self) -> None:
        if self._listener is not None:
            await cancel_and_wait([self._listener])
            self._listener = None
        await super().stop()

    async def _listen(self, pubsub: aioredis.client.PubSub) -> None:
        try:
            async for item in pubsub.listen():
                group = self._groups.get(item["data"])
                if group is not None:
                    group.wake()
        finally:
            await pubsub.aclose()

    async def redis_acquire(
        self, group: _RedisGroup, holder: str, *, more: bool, lowest: bool
    ) -> bool:
        now = time.time()
        return bool(
            await self._acquire(
                keys=[group.slots_key, group.queue_key],
                args=[
                    now,
                    self.slots,
                    now + self.lease_seconds,
                    holder,
                    keys.heartbeat(""),
                    self.instance_id,
                    int(more),
                    int(lowest),
                ],
            )
        )

    async def redis_release(self, group: _RedisGroup, holder: str) -> None:
        await self._release(
            keys=[group.slots_key], args=[holder, keys.slot_channel(), group.endpoint]
        )

    async def refresh(self) -> None:
        """Extend the leases of the slots this process holds (the keeper: every marker
        refresh, and at once from a beat that finds this process was declared dead).

        A held slot whose entry is gone while its run goes on — another process dropped it
        as a dead holder's (this process's heartbeat lapsed under load), or its lease ran
        out in a stall — is put back: the run still uses the model endpoint, so it counts,
        and no run starts anywhere until the endpoint is back under `graph_slots`. Between
        the drop and this refresh another process may have taken the slot (the endpoint is
        over-committed for as long as both runs last); putting it back keeps that from
        compounding. A slot released while this refresh was on its way stays released."""
        expiry = time.time() + self.lease_seconds
        for group in list(self._groups.values()):
            if not isinstance(group, _RedisGroup) or not group.held:
                continue
            holders = list(group.held)
            added = await self.redis.zadd(group.slots_key, dict.fromkeys(holders, expiry))
            for holder in holders:
                if holder not in group.held:  # its release may have come before the ZADD
                    await self.redis_release(group, holder)
            if added:
                log.warning(
                    "run slots put back: their runs went on after the slots were "
                    "dropped (this process was declared dead, or stalled past its "
                    "lease)",
                    extra=fields(
                        endpoint=group.endpoint,
                        slots=added,
                        instance=self.instance_id,
                        setting="heartbeat_seconds",
                    ),
                )
