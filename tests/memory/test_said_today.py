"""Issue 21, item 3: the same offline reply is not repeated within the user's day — kept in
Redis per pair (`keys.offline_said`), so a restarted app on the same Redis still knows it,
and counted in the user's time zone: the day ends at their midnight (UTC+14 and UTC-12,
where the machine's or UTC's date is another), and the key expires then."""

from __future__ import annotations

import datetime as dt
import time
from zoneinfo import ZoneInfo

import pytest

from app.memory import keys
from app.memory.said_today import PER_DAY, SaidToday
from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.pipeline_support import open_chat

PAIR = keys.pair_id("local", "nova")


class Clock:
    def __init__(self, at: dt.datetime) -> None:
        self.now = at.timestamp()

    def __call__(self) -> float:
        return self.now


async def expires_at(redis, key: str) -> float:
    """When Redis will drop `key` (EXPIRETIME needs Redis 7: from the TTL and now)."""
    return time.time() + await redis.pttl(key) / 1000


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("zone, last_minute, midnight", [
    # (a day to come: an expiry in the past would end the key at once)
    # Kiritimati, UTC+14: 23:59 on 2 December is 09:59 UTC the same date
    ("Pacific/Kiritimati", "2099-12-02T09:59:00", "2099-12-02T10:00:00"),
    # UTC-12 (Etc/GMT+12): 23:59 on 2 December is 11:59 UTC on 3 December
    ("Etc/GMT+12", "2099-12-03T11:59:00", "2099-12-03T12:00:00"),
    ("Europe/Berlin", "2099-12-02T22:59:00", "2099-12-02T23:00:00"),
    ("UTC", "2099-12-02T23:59:00", "2099-12-03T00:00:00"),
])
async def test_the_day_ends_at_the_users_midnight(redis_client, zone, last_minute, midnight):
    clock = Clock(utc(last_minute))
    memory = SaidToday(redis_client, ZoneInfo(zone), clock)
    await memory.remember(PAIR, ["Erzähl mir mehr."])
    assert await memory.said(PAIR) == ["Erzähl mir mehr."]
    clock.now = utc(midnight).timestamp() - 1  # 23:59:59 local: still the day
    assert await memory.said(PAIR) == ["Erzähl mir mehr."]
    # Redis forgets it at the user's midnight ...
    key = keys.offline_said("local", "nova")
    assert await expires_at(redis_client, key) == pytest.approx(utc(midnight).timestamp(), abs=2)
    # ... and a reader at 00:00 local does not count it, however late the expiry is.
    clock.now = utc(midnight).timestamp()
    assert await memory.said(PAIR) == []
    await memory.remember(PAIR, ["Wie war dein Tag?"])
    assert await memory.said(PAIR) == ["Wie war dein Tag?"]
    assert await expires_at(redis_client, key) == pytest.approx(
        utc(midnight).timestamp() + 86400, abs=2)


async def test_it_is_per_pair_and_keeps_the_newest_of_a_day(redis_client):
    clock = Clock(utc("2099-12-02T12:00:00"))
    memory = SaidToday(redis_client, ZoneInfo("Europe/Berlin"), clock)
    await memory.remember(PAIR, [f"Satz {n}" for n in range(PER_DAY + 3)])
    await memory.remember(keys.pair_id("local", "other"), ["Anderes"])
    said = await memory.said(PAIR)
    assert len(said) == PER_DAY and said[0] == "Satz 3" and said[-1] == f"Satz {PER_DAY + 2}"
    assert await memory.said(keys.pair_id("local", "other")) == ["Anderes"]
    assert await memory.said(keys.pair_id("someone", "nova")) == []


TEXTS = ["Ich war heute einkaufen.", "Das Wetter war okay.", "Ich bin traurig.", "Hm.",
         "Okay.", "Was denkst du?", "Hallo", "Wie geht es dir?"]


async def test_a_restarted_app_on_the_same_redis_does_not_repeat_a_reply(make_settings,
                                                                          aiohttp_client):
    """Two runs of the app on one data dir (one Redis), the second after the first is shut
    down, with a prompt window too small to show the first run's replies: no reply of the
    day comes twice."""
    settings = make_settings(llm_provider="offline", session_window_exchanges=1)
    answers = []
    for _ in range(2):
        app = create_app(settings, local_token=TOKEN)
        chat = await open_chat(aiohttp_client, app)
        for text in TEXTS:
            answers.append((await chat.response(await chat.send(text)))["text"])
        await chat.settle()
        await chat.close()
        await chat.client.close()
    repeated = {a for a in answers if answers.count(a) > 1}
    assert not repeated, repeated
