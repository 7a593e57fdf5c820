"""`kill -9` between a turn's Redis commit and its row in the message log (issue 24, item
17): after the restart every delivered turn has its rows in the message log (SQLite or
PostgreSQL), each exactly once.

The real entry point runs as a subprocess against the fake model server and kills itself
with SIGKILL (the setting `test_crash_at`) at each point between the two writes: right after
the commit of the user turn (path 1) or of the answer (path 2), and after the row's append
to SQLite but before its promise left the pair's outbox. It is started again on the same
data dir without the setting; the turn reruns and is delivered."""

from __future__ import annotations

import asyncio
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
import redis as redis_sync

from app.memory import keys
from tests.kill_support import WAIT, call, fake_model_env, get, restarted
from tests.procs import AppProcess
from tests.store import live_connection
from tests.waiting import wait_message

ANSWER = "Schön, dass du schreibst."


async def closed(proc: AppProcess, message_id: str) -> dict:
    """The message once it has ended (answered or failed)."""
    return await wait_message(partial(get, proc), message_id, timeout=WAIT, every=0.05)


def rows_of(data_dir: Path) -> list[tuple[str, str, str]]:
    """The message log's rows of the app on `data_dir`, on the test's engine."""
    conn = live_connection(data_dir)
    try:
        return [tuple(row) for row in
                conn.execute("SELECT turn_id, role, entry_key FROM messages").fetchall()]
    finally:
        conn.close()


@pytest.mark.parametrize("point", ["user:committed", "user:appended", "answer:committed",
                                   "answer:appended"])
async def test_a_crash_between_commit_and_log_loses_no_row(fake_model, data_dir, point):
    fake_model.always("responder", ANSWER)
    proc = AppProcess(data_dir, env=fake_model_env(fake_model, NOVABERG_TEST_CRASH_AT=point))
    await asyncio.to_thread(proc.start)
    status, body = await call(proc, "POST", "/api/characters/nova/messages",
                              {"text": "Ich bin wieder da."})
    assert status == 202, body
    message_id = body["message_id"]
    assert await asyncio.to_thread(proc.process.wait, WAIT) == -9  # died at the point
    await asyncio.to_thread(proc.kill)  # reaped already; closes its log

    async with restarted(proc, fake_model_env(fake_model)) as again:
        state = await closed(again, message_id)
        assert state["state"] == "delivered", state
        turn_id = state["turn_id"]
        status, session = await call(again, "GET", "/api/characters/nova/session")
        turns = [(t["turn_id"], t["rolle"]) for t in session["turns"]]
        assert turns == [(turn_id, "user"), (turn_id, "assistant")]
        # The next turn is logged as well, and nothing is left promised.
        status, body = await call(again, "POST", "/api/characters/nova/messages",
                                  {"text": "Und jetzt?"})
        following = (await closed(again, body["message_id"]))["turn_id"]
        client = redis_sync.Redis(unix_socket_path=str(data_dir / "redis" / "redis.sock"))
        assert client.llen(keys.message_outbox("local", "nova")) == 0
        client.close()
        rows = rows_of(data_dir)

    assert Counter((turn, role) for turn, role, _ in rows) == {
        (turn_id, "user"): 1, (turn_id, "assistant"): 1,
        (following, "user"): 1, (following, "assistant"): 1}
    assert len({key for _, _, key in rows}) == 4
