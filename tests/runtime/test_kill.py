"""`kill -9` during path 2, then a restart: the message is closed (design §5 Lifecycle).

The real entry point runs as a subprocess (`python -m app --headless …`) with its installed
pipelines against the fake model server, which hangs on the first `responder` call. The
process is killed with SIGKILL while it waits there and started again on the same data dir:
the same turn runs again (attempt 2) and, the model answering now, the message is answered.
"""

from __future__ import annotations

from functools import partial

from tests.fakemodel import Fault
from tests.kill_support import WAIT, app_to_kill, call, fake_model_env, get, restarted
from tests.waiting import wait_message


async def test_kill_9_during_path2_then_restart_closes_the_message(fake_model, data_dir):
    fake_model.script("responder", Fault.hang(), "Da bin ich wieder.")
    env = fake_model_env(fake_model)
    async with app_to_kill(data_dir, env) as proc:
        status, body = await call(proc, "POST", "/api/characters/nova/messages",
                                  {"text": "Bist du noch da?"})
        assert status == 202, body
        message_id = body["message_id"]
        await fake_model.wait_requests(1, "responder", timeout=WAIT)
        status, before = await call(proc, "GET", f"/api/messages/{message_id}")
        assert before["state"] == "path2"

    async with restarted(proc, env) as again:
        state = await wait_message(partial(get, again), message_id, timeout=WAIT, every=0.05)
        assert state["turn_id"] == before["turn_id"]  # the same turn, not a new one
        assert state["state"] == "delivered", state
        status, turn = await call(again, "GET", f"/api/turns/{state['turn_id']}")
        assert turn["attempts"] == 2
        assert [h["state"] for h in turn["history"]][:4] == ["queued", "path1", "path2", "queued"]
        status, session = await call(again, "GET", "/api/characters/nova/session")
        texts = [t["inhalt"] for t in session["turns"]]
        assert texts.count("Bist du noch da?") == 1  # the user turn was kept once
        assert "Da bin ich wieder." in texts
        # Nothing open is left behind: a new message is taken and closed as well.
        status, body = await call(again, "POST", "/api/characters/nova/messages",
                                  {"text": "Und jetzt?"})
        assert status == 202
        await wait_message(partial(get, again), body["message_id"], timeout=WAIT, every=0.05)
