"""The pair lock: the turn marker `turn_laeuft:{user}:{character}` (design §5, seed 001 §3.0).

Set with `SET NX` and a TTL (the emergency brake) by whoever starts a turn of the pair; its
value ``{instance_id}:{turn_id}`` names the owning process and the turn. Only its owner
refreshes or deletes it, so both are compare-and-act scripts.

`PairLocks` is the one place that sets, holds, refreshes and releases markers for this
process: the consumer takes and releases them, the keeper refreshes what is held, recovery
adopts the marker of a turn it resumes and clears those of dead owners. It remembers which
marker this process holds for each pair (`held`), so nothing else keeps that map.
"""

from __future__ import annotations

import logging

import redis.asyncio as aioredis

from app.core.log import fields
from app.memory import keys
from app.memory.commit import DELETE_IF_OWNER

log = logging.getLogger(__name__)

REFRESH = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


def marker_value(instance_id: str, turn_id: str) -> str:
    return f"{instance_id}:{turn_id}"


def parse_marker(value: str) -> tuple[str, str]:
    """(instance_id, turn_id) of a marker value."""
    instance_id, _, turn_id = value.partition(":")
    return instance_id, turn_id


def marker_key(pair: str) -> str:
    return keys.turn_marker(*keys.split_pair(pair))


class PairLocks:
    """The markers this process sets, holds and gives back."""

    def __init__(self, redis: aioredis.Redis, instance_id: str, ttl: int) -> None:
        self.redis = redis
        self.instance_id = instance_id
        self.ttl = ttl
        self.held: dict[str, str] = {}  # pair → marker value this process holds
        self._release = redis.register_script(DELETE_IF_OWNER)
        self._refresh = redis.register_script(REFRESH)

    def marker_for(self, turn_id: str) -> str:
        return marker_value(self.instance_id, turn_id)

    def holding(self, pair: str) -> str | None:
        return self.held.get(pair)

    async def take(self, pair: str, marker: str) -> bool:
        """Set the pair's marker if it is free (`SET NX`); True when it is now ours."""
        if not await self.redis.set(marker_key(pair), marker, nx=True, ex=self.ttl):
            return False
        self.held[pair] = marker
        return True

    def keep(self, pair: str, marker: str) -> None:
        """The pair's marker, as just read, is this one already (a turn's second half)."""
        self.held[pair] = marker

    async def release(self, pair: str, marker: str) -> bool:
        """Give the marker back if it is still ours."""
        released = bool(await self._release(keys=[marker_key(pair)], args=[marker]))
        self.forget(pair, marker)
        return released

    async def release_foreign(self, pair: str, marker: str) -> bool:
        """Clear a marker a dead owner left (recovery); only if it still holds that value."""
        return bool(await self._release(keys=[marker_key(pair)], args=[marker]))

    def forget(self, pair: str, marker: str | None = None) -> None:
        """Stop holding the pair (its marker was released in the same step as something else,
        or deleted by a reset); `marker`: only if that is the one held."""
        if marker is None or self.held.get(pair) == marker:
            self.held.pop(pair, None)

    async def refresh_held(self) -> None:
        """Extend every held marker's TTL (the keeper, every `turn_marker_refresh_seconds`)."""
        for pair, value in list(self.held.items()):
            kept = bool(await self._refresh(keys=[marker_key(pair)], args=[value, self.ttl]))
            if not kept and self.held.get(pair) == value:
                log.warning(
                    "turn marker lost while its turn runs",
                    extra=fields(pair=pair, marker=value, setting="turn_marker_ttl"),
                )
