"""A text with U+0000 is refused where it comes in (app.core.json_input): PostgreSQL cannot
store it, so on the scale-out engine such a message was accepted (202) and then could not
reach the durable log. Now it is a 400 in the error shape on both engines, and nothing is
written: not the message, not any row of an import that holds one. A model's answer with one
is delivered and stored without it (before, on PostgreSQL, the turn failed with
internal_error)."""

from __future__ import annotations

import json

from app.api.app_keys import DB, REDIS
from app.memory.message_log import MessageLog
from tests.conftest import AUTH
from tests.pipeline_support import fake_app, open_chat


def imported(entry_key: str, text: str) -> dict[str, object]:
    return {"entry_key": entry_key, "turn_id": f"t-{entry_key}", "character_id": "nova",
            "role": "user", "text": text, "created": 1772323200.0,
            "calendar_date": "2026-03-01"}


async def test_a_message_with_nul_is_refused_and_nothing_is_queued(client):
    before = await client.app[REDIS].keys("*")
    response = await client.post("/api/characters/nova/messages",
                                 json={"text": "Hallo\x00Welt"}, headers=AUTH)
    body = await response.json()
    assert response.status == 400, body
    assert body["error"]["code"] == "invalid_request"
    assert "U+0000" in body["error"]["message"]
    after = {k for k in await client.app[REDIS].keys("*") if not k.startswith("heartbeat:")}
    assert after == {k for k in before if not k.startswith("heartbeat:")}
    # The same text without it goes through.
    fine = await client.post("/api/characters/nova/messages", json={"text": "Hallo Welt"},
                             headers=AUTH)
    assert fine.status == 202


async def test_an_import_with_one_nul_text_is_refused_whole(client):
    document = {"kind": "novaberg.chat", "format_version": 1, "messages": [
        imported("imp-1", "Die Messe ist groß."), imported("imp-2", "Zimmer\x004711")]}
    response = await client.post("/api/imports", data=json.dumps(document), headers=AUTH)
    body = await response.json()
    assert response.status == 400, body
    assert "U+0000" in body["error"]["message"]
    assert await MessageLog(client.app[DB]).for_user("local", character_id="nova") == []
    # Without the NUL the same document imports both rows.
    document["messages"][1]["text"] = "Zimmer 4711"
    response = await client.post("/api/imports", data=json.dumps(document), headers=AUTH)
    assert response.status == 200, await response.json()
    assert len(await MessageLog(client.app[DB]).for_user("local", character_id="nova")) == 2


async def test_a_models_answer_with_nul_is_delivered_and_stored_without_it(
        fake_model, make_settings, aiohttp_client):
    fake_model.always("responder", "Klingt\x00 gut.")
    app = fake_app(fake_model, make_settings, input_window_seconds=0.0)
    chat = await open_chat(aiohttp_client, app)
    answer = await chat.response(await chat.send("Hallo Nova"))
    assert answer["text"] == "Klingt gut."
    await chat.settle()
    rows = await MessageLog(app[DB]).for_user("local", character_id="nova")
    assert [(r.role, r.text) for r in rows] == [("user", "Hallo Nova"),
                                                ("assistant", "Klingt gut.")]


async def test_a_pasted_profile_result_with_nul_is_refused(client):
    for body in (json.dumps({"text": '{"dimensions": {}}\x00'}), '{"dimensions": "\\u0000"}'):
        response = await client.post("/api/profile/results", data=body, headers=AUTH)
        answer = await response.json()
        assert response.status == 400, answer
        assert answer["error"]["code"] == "invalid_request"
        assert "U+0000" in answer["error"]["message"]
    listed = await client.get("/api/profile/proposals", headers=AUTH)
    assert await listed.json() == []
