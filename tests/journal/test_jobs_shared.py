"""Journal jobs when processes share the store and one Redis (issue 26): a job belongs to the
process that runs it; a start, and the death watch when another process's heartbeat goes,
fail only the jobs of processes that are gone — never a live process's running job — and a
user has one open job across all of them.

The first two run on both engines (an external Redis beside the data dir's SQLite is a
process of its own store too); the two-process ones need PostgreSQL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis as sync_redis
from aiohttp import web

from app.memory import keys
from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.fakemodel import Fault
from tests.journal.test_api import DATE, call, import_day
from tests.waiting import until


@pytest.fixture
def shared_app(fake_model, make_settings, session_redis) -> Callable[..., web.Application]:
    """An app on the test's store and the test's one Redis, as a process of several."""
    fake_model.context_length = 32768
    redis_url = session_redis.url("shared")

    def make(data_dir: str | None = None, **overrides: Any) -> web.Application:
        settings = make_settings(**fake_model.overrides(
            **{"llm_context": 32768, "redis_url": redis_url, **overrides}))
        if data_dir is not None:  # a process of its own beside the first
            settings = settings.replace(data_dir=data_dir)
        return create_app(settings, local_token=TOKEN)

    return make


def open_job(conn: Any, job_id: str, user_id: str, owner: str | None) -> None:
    conn.execute("INSERT INTO journal_jobs (job_id, user_id, calendar_date, state, owner, "
                 "created_at, updated_at) VALUES (?, ?, ?, 'narrate', ?, ?, ?)",
                 (job_id, user_id, DATE, owner, time.time(), time.time()))


def states(conn: Any) -> dict[str, tuple[str, str | None]]:
    return {row[0]: (row[1], row[2]) for row in conn.execute(
        "SELECT job_id, state, error_code FROM journal_jobs")}


async def test_a_start_fails_only_the_jobs_of_processes_that_are_gone(
        aiohttp_client, shared_app, in_store, session_redis) -> None:
    first = await aiohttp_client(shared_app())
    await first.close()  # the store is migrated; nothing of this app's is open
    redis = sync_redis.Redis.from_url(session_redis.url("shared"))
    redis.set(keys.heartbeat("alive0000001"), "alive", ex=60)  # a live process's heartbeat
    with in_store() as conn:
        open_job(conn, "job_live", "anna", "alive0000001")
        open_job(conn, "job_gone", "bob", "gone00000001")
        open_job(conn, "job_old", "carl", None)  # from before owners: its process is gone
    await aiohttp_client(shared_app())
    with in_store() as conn:
        assert states(conn) == {"job_live": ("narrate", None),
                                "job_gone": ("failed", "interrupted"),
                                "job_old": ("failed", "interrupted")}
    redis.close()


async def test_the_death_watch_fails_the_job_of_a_process_whose_heartbeat_expired(
        aiohttp_client, shared_app, in_store, session_redis) -> None:
    await aiohttp_client(shared_app(heartbeat_seconds=1))
    redis = sync_redis.Redis.from_url(session_redis.url("shared"))
    with redis.pipeline() as pipe:  # another process, listed, its heartbeat about to expire
        pipe.set(keys.heartbeat("dying000001"), "alive", px=1500)
        pipe.sadd(keys.instances(), "dying000001")
        pipe.execute()
    with in_store() as conn:  # the app runs already: no start of it sees this job
        open_job(conn, "job_dying", "anna", "dying000001")

    def job_state() -> tuple[str, str | None]:
        with in_store() as conn:
            return states(conn)["job_dying"]

    assert await until(job_state, lambda state: state == ("failed", "interrupted"),
                       timeout=10, every=0.2)
    redis.close()


@pytest.mark.postgres_only
async def test_a_second_process_leaves_the_first_ones_running_job_alone(
        aiohttp_client, shared_app, fake_model, tmp_path: Path) -> None:
    fake_model.script("journal_reconstruct", Fault.hang())
    first = await aiohttp_client(shared_app())
    await import_day(first)
    started = await call(first, "POST", f"/api/journal/days/{DATE}/drafts", 202)
    await fake_model.wait_requests(1)
    second = await aiohttp_client(shared_app(data_dir=str(tmp_path / "second")))
    job = await call(second, "GET", f"/api/journal/jobs/{started['job_id']}")
    assert job["state"] == "reconstruct"  # B's start did not fail A's running job
    # One open job per user across the processes.
    busy = await call(second, "POST", f"/api/journal/days/{DATE}/drafts", 409)
    assert busy["error"]["code"] == "journal_busy"
    await first.close()  # A stops: its own job ends failed, said so by A
    assert (await call(second, "GET", f"/api/journal/jobs/{started['job_id']}"))["error"][
        "code"] == "interrupted"


@pytest.mark.postgres_only
async def test_two_processes_starting_a_users_job_at_once_give_one_job(
        aiohttp_client, shared_app, fake_model, tmp_path: Path) -> None:
    fake_model.script("journal_reconstruct", Fault.hang())
    clients = [await aiohttp_client(shared_app()),
               await aiohttp_client(shared_app(data_dir=str(tmp_path / "second")))]
    await import_day(clients[0])
    answers = await asyncio.gather(*(
        client.post(f"/api/journal/days/{DATE}/drafts",
                    headers={"Authorization": f"Bearer {TOKEN}"}) for client in clients))
    assert sorted(answer.status for answer in answers) == [202, 409]
    [refused] = [answer for answer in answers if answer.status == 409]
    assert (await refused.json())["error"]["code"] == "journal_busy"
