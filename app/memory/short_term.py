"""Short-term memory (the seed's KZG): salient segments of recent turns, per pair.

A sorted set `kzg:{user}:{character}` whose members are entry JSON and whose scores are the
entries' expiry times: each entry lives `short_term_memory_ttl` seconds, and at most
`short_term_memory_max_entries` are kept (the oldest go first). Reads drop what has expired.
Entries are whole sentences; nothing is ever cut.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from app.core.log import fields
from app.core.settings import Settings
from app.memory import keys
from app.memory.commit import Blind, Write

log = logging.getLogger(__name__)


class MemoryEntry(msgspec.Struct, kw_only=True):
    id: str
    text: str
    turn_id: str
    role: str  # "user" | "assistant": whose words it came from
    importance: float
    created_at: float


_DECODER = msgspec.json.Decoder(MemoryEntry)
_ENCODER = msgspec.json.Encoder()


class ShortTermMemory:
    def __init__(self, redis: aioredis.Redis, settings: Settings) -> None:
        self.redis = redis
        self.settings = settings

    async def add(
        self,
        user_id: str,
        character_id: str,
        texts: list[str],
        *,
        turn_id: str,
        role: str,
        importance: float,
        now: float | None = None,
    ) -> list[MemoryEntry]:
        """Store one entry per non-empty text; returns what was stored."""
        write, entries = self.add_write(
            user_id, character_id, texts, turn_id=turn_id, role=role, importance=importance, now=now
        )
        if entries:
            async with self.redis.pipeline(transaction=True) as pipe:
                picker = write.queue(pipe)
                results = await pipe.execute()
            if picker is not None:
                picker(results)
        return entries

    def add_write(
        self,
        user_id: str,
        character_id: str,
        texts: list[str],
        *,
        turn_id: str,
        role: str,
        importance: float,
        now: float | None = None,
    ) -> tuple[Write, list[MemoryEntry]]:
        """`add` as one part of a turn's commit (`app.memory.commit`), and its entries."""
        now = time.time() if now is None else now
        entries = [
            MemoryEntry(
                id=uuid.uuid4().hex,
                text=text.strip(),
                turn_id=turn_id,
                role=role,
                importance=importance,
                created_at=now,
            )
            for text in texts
            if text.strip()
        ]
        key = keys.short_term_memory(user_id, character_id)
        ttl = self.settings.short_term_memory_ttl
        limit = self.settings.short_term_memory_max_entries
        pair = keys.pair_id(user_id, character_id)

        def queue(pipe: Pipeline) -> Callable[[list[Any]], None] | None:
            if not entries:
                return None
            # Same expiry for the whole batch: a tie in score orders by member, so the id
            # keeps the order stable; `created_at` orders reads.
            pipe.zadd(key, {_ENCODER.encode(e).decode(): now + ttl for e in entries})
            pipe.zremrangebyscore(key, "-inf", now)
            pipe.zremrangebyrank(key, 0, -limit - 1)
            pipe.expire(key, ttl)

            def dropped(results: list[Any]) -> None:
                if results[2]:
                    log.warning(
                        "short_term_memory_max_entries dropped the oldest entries",
                        extra=fields(
                            limit="short_term_memory_max_entries",
                            max_entries=limit,
                            dropped=results[2],
                            pair=pair,
                        ),
                    )

            return dropped

        return Blind(queue), entries

    async def recent(
        self, user_id: str, character_id: str, count: int, now: float | None = None
    ) -> list[MemoryEntry]:
        """The newest `count` live entries, oldest first."""
        if count <= 0:
            return []
        return _newest(
            keys.texts(
                await self.redis.zrevrangebyscore(
                    *_live_range(user_id, character_id, now), start=0, num=count
                )
            ),
            count,
        )

    def queue_recent(
        self, pipe: Pipeline, user_id: str, character_id: str, count: int, now: float | None = None
    ) -> Callable[[list[Any]], list[MemoryEntry]]:
        """`recent`'s read queued on a pipeline the caller executes (one snapshot and round
        trip with other reads of the pair); the returned function picks the entries out of
        the pipeline's results."""
        if count <= 0:
            return lambda results: []
        index = len(pipe)
        pipe.zrevrangebyscore(*_live_range(user_id, character_id, now), start=0, num=count)
        return lambda results: _newest(results[index], count)


def _live_range(user_id: str, character_id: str, now: float | None) -> tuple[str, str, str]:
    """Key, max and min score of the live entries, newest first. The score is the expiry
    (created_at + ttl, one ttl for all), so the highest live scores are the newest entries:
    a read takes just the `count` it needs, not the whole set."""
    now = time.time() if now is None else now
    return keys.short_term_memory(user_id, character_id), "+inf", f"({now}"


def _newest(raws: list[str], count: int) -> list[MemoryEntry]:
    entries = []
    for raw in raws:
        try:
            entries.append(_DECODER.decode(raw))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue  # a foreign member: not ours to read
    entries.sort(key=lambda e: e.created_at)
    return entries[-count:]
