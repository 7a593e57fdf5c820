"""The turn marker `turn_laeuft:{user}:{character}` (SPEC §5, seed 001 §3.0).

Set with `SET NX` and a TTL (the emergency brake) by whoever starts a turn of the pair; its
value ``{instance_id}:{turn_id}`` names the owning process and the turn. Only its owner
refreshes or deletes it, so both are compare-and-act scripts.
"""

from __future__ import annotations

import redis.asyncio as aioredis

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

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


class Markers:
    def __init__(self, redis: aioredis.Redis) -> None:
        self._release = redis.register_script(RELEASE)
        self._refresh = redis.register_script(REFRESH)

    async def release(self, key: str, value: str) -> bool:
        return bool(await self._release(keys=[key], args=[value]))

    async def refresh(self, key: str, value: str, ttl: int) -> bool:
        return bool(await self._refresh(keys=[key], args=[value, ttl]))
