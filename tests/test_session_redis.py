"""The test suite's one redis-server (tests/conftest.py `SessionRedis`): what a test writes
never reaches the next, an app restarted on its data dir finds its keys, and an app on
another data dir starts empty — as with a redis-server per data dir."""

from __future__ import annotations

import pytest
import redis as sync_redis

from app.api.app_keys import REDIS, REDIS_INFO
from app.core.settings import defaults
from app.wiring.server import create_app
from tests.conftest import SESSION_DATABASES, TOKEN, SessionRedis


def client_of(url: str) -> sync_redis.Redis:
    return sync_redis.Redis.from_url(url, decode_responses=True)


def test_each_test_starts_on_empty_databases_and_an_owner_keeps_its_own() -> None:
    shared = SessionRedis()
    try:
        shared.begin_test()
        first, second = shared.url("a"), shared.url("b")
        assert first != second and shared.url("a") == first
        with client_of(first) as a, client_of(second) as b:
            a.set("probe", "a")
            assert b.get("probe") is None
        shared.begin_test()  # the next test
        assert shared.url("a") == first  # database 0 again …
        with client_of(first) as a, client_of(second) as b:
            assert a.dbsize() == 0 and b.dbsize() == 0  # … flushed, and every other too
    finally:
        shared.stop()


def test_a_test_asking_for_more_databases_than_there_are_is_told_to_use_its_own() -> None:
    shared = SessionRedis()
    try:
        shared.begin_test()
        for owner in range(SESSION_DATABASES):
            shared.url(owner)
        with pytest.raises(RuntimeError, match="own_redis"):
            shared.url("one too many")
    finally:
        shared.stop()


async def test_apps_get_a_database_per_data_dir(make_settings, aiohttp_client, tmp_path):
    settings = make_settings(llm_provider="offline")
    first = await aiohttp_client(create_app(settings, local_token=TOKEN))
    await first.app[REDIS].set("probe", "first")
    assert first.app[REDIS_INFO].embedded  # to the app it is its embedded Redis
    other = tmp_path / "other"
    other.mkdir()
    second = await aiohttp_client(create_app(defaults(data_dir=str(other),
                                                      llm_provider="offline"),
                                             local_token=TOKEN))
    assert await second.app[REDIS].get("probe") is None
    await first.close()
    again = await aiohttp_client(create_app(settings, local_token=TOKEN))
    assert await again.app[REDIS].get("probe") == "first"


async def test_a_key_of_an_earlier_test_is_gone(redis_client):
    """Runs after the test above in this file: its apps' keys are flushed."""
    assert await redis_client.dbsize() == 0
