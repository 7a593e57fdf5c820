"""What the offline model said to a pair today (issue 21, item 3: the same offline reply is
not repeated within a day).

A real model has the whole conversation in view; the offline rules see only the prompt's
window and would say the same sentence again later in the day. So the offline provider
reads, before a reply, what it said to the pair on the user's calendar day, and adds what it
says. Kept in Redis (`keys.offline_said`, a list of `{"day", "text"}` entries, the newest
`PER_DAY`) so that a restart does not forget it; the day is the user's (setting `timezone`,
`app.core.clock`): the key expires at the user's midnight, and an entry of another day is
never read, whatever the expiry's timing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from datetime import tzinfo

import msgspec
import redis.asyncio as aioredis

from app.core.clock import calendar_date, day_end
from app.memory import keys

PER_DAY = 500


class Said(msgspec.Struct, frozen=True):
    day: str
    text: str


_DECODER = msgspec.json.Decoder(Said)
_ENCODER = msgspec.json.Encoder()


class SaidToday:
    """The offline provider's memory of the day, per pair ("user_id:character_id")."""

    def __init__(
        self, redis: aioredis.Redis, zone: tzinfo | None, clock: Callable[[], float] = time.time
    ) -> None:
        self.redis = redis
        self.zone = zone
        self.clock = clock

    def _key(self, pair: str) -> str:
        return keys.offline_said(*keys.split_pair(pair))

    async def said(self, pair: str) -> list[str]:
        """The replies of the user's today, oldest first."""
        today = calendar_date(self.clock(), self.zone)
        found = []
        for raw in await self.redis.lrange(self._key(pair), 0, -1):
            try:
                entry = _DECODER.decode(raw)
            except msgspec.DecodeError:
                continue  # not ours to read: it only cost variety
            if entry.day == today:
                found.append(entry.text)
        return found

    async def remember(self, pair: str, replies: Sequence[str]) -> None:
        if not replies:
            return
        now = self.clock()
        today = calendar_date(now, self.zone)
        key = self._key(pair)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.rpush(key, *(_ENCODER.encode(Said(today, text)) for text in replies))
            pipe.ltrim(key, -PER_DAY, -1)
            pipe.expireat(key, math.ceil(day_end(now, self.zone)))
            await pipe.execute()
