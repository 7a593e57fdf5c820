"""The message routes (design §9): accept, bad input at the boundary, message and turn reads."""

from __future__ import annotations

import asyncio

import pytest

from app.api.app_keys import PIPELINES, REDIS
from app.memory import keys
from app.pipeline.vocabulary import Path1Result, Path2Result, Pipelines
from tests.conftest import AUTH, TOKEN
from tests.store import store_connection

URL = "/api/characters/nova/messages"


async def stored_keys(client) -> set[str]:
    """Every Redis key except the process heartbeat (which ticks on its own)."""
    keys = await client.app[REDIS].keys("*")
    return {k for k in keys if not k.startswith("heartbeat:")}


PATH1_ENTERED: list[asyncio.Event] = []


async def _hold_path1(ctx, block):  # a pipeline that never finishes: the message stays put
    for entered in PATH1_ENTERED:
        entered.set()
    await asyncio.Event().wait()
    return Path1Result()


async def _never(ctx, run):  # pragma: no cover - path 1 never ends in these tests
    raise AssertionError
    return Path2Result(text="", origin="reply")


@pytest.fixture
def app(app):
    # These tests look at the accept path only; keep the turn from moving on.
    app[PIPELINES] = Pipelines(path1=_hold_path1, path2=_never)
    return app


async def test_accept_answers_202_with_id_and_records_the_message(client):
    response = await client.post(URL, json={"text": "  Hallo Nova  "}, headers=AUTH)
    assert response.status == 202
    body = await response.json()
    assert set(body) == {"message_id", "received_at"}
    record = await client.app[REDIS].hgetall(keys.message_record(body["message_id"]))
    assert record["text"] == "Hallo Nova"  # trimmed, otherwise as sent
    assert record["user_id"] == "local" and record["character_id"] == "nova"
    status = await client.get(f"/api/messages/{body['message_id']}", headers=AUTH)
    assert status.status == 200
    message = await status.json()
    assert message["message_id"] == body["message_id"]
    assert message["state"] in ("accepted", "queued", "path1")


@pytest.mark.parametrize("payload, status, code", [
    ({"text": ""}, 400, "empty_message"),
    ({"text": "   \n\t "}, 400, "empty_message"),
    ({"text": 42}, 400, "invalid_request"),
    ({"text": None}, 400, "invalid_request"),
    ({}, 400, "invalid_request"),
    ({"text": "hi", "user_id": "someone-else"}, 400, "invalid_request"),
    (["hi"], 400, "invalid_request"),
    ({"text": "x" * 20001}, 413, "message_too_long"),
])
async def test_bad_input_gets_the_error_shape_and_writes_nothing(client, payload, status, code):
    before = await stored_keys(client)
    response = await client.post(URL, json=payload, headers=AUTH)
    assert response.status == status
    body = await response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert await stored_keys(client) == before


async def test_exactly_the_limit_is_accepted_and_the_limit_counts_after_trimming(client):
    response = await client.post(URL, json={"text": "  " + "x" * 20000 + "  "}, headers=AUTH)
    assert response.status == 202


async def test_invalid_json_is_400_and_writes_nothing(client):
    before = await stored_keys(client)
    response = await client.post(URL, data=b"{not json", headers={
        **AUTH, "Content-Type": "application/json"})
    assert response.status == 400
    assert (await response.json())["error"]["code"] == "invalid_request"
    assert await stored_keys(client) == before


async def test_unknown_character_is_404_and_writes_nothing(client):
    before = await stored_keys(client)
    response = await client.post("/api/characters/zorro/messages", json={"text": "hi"},
                                 headers=AUTH)
    assert response.status == 404
    assert (await response.json())["error"]["code"] == "unknown_character"
    assert await stored_keys(client) == before


async def test_no_auth_is_401_and_writes_nothing(client):
    before = await stored_keys(client)
    response = await client.post(URL, json={"text": "hi"})
    assert response.status == 401
    bad = await client.post(URL, json={"text": "hi"}, headers={"Authorization": "Bearer nope"})
    assert bad.status == 401
    assert await stored_keys(client) == before


async def test_foreign_origin_is_403_and_writes_nothing(client):
    before = await stored_keys(client)
    response = await client.post(URL, json={"text": "hi"},
                                 headers={**AUTH, "Origin": "http://evil.example"})
    assert response.status == 403
    assert await stored_keys(client) == before


async def test_rate_limit_answers_429_beyond_the_burst_and_writes_nothing(
        aiohttp_client, make_settings):
    from app.wiring.server import create_app

    app = create_app(make_settings(llm_provider="offline", rate_limit_per_second=1.0),
                     local_token=TOKEN)
    app[PIPELINES] = Pipelines(path1=_hold_path1, path2=_never)
    client = await aiohttp_client(app)
    entered = asyncio.Event()
    PATH1_ENTERED.append(entered)
    try:
        statuses = []
        for i in range(2):  # burst: twice the rate
            statuses.append((await client.post(URL, json={"text": f"m{i}"}, headers=AUTH)).status)
        await asyncio.wait_for(entered.wait(), 10)  # the runtime has stopped writing
    finally:
        PATH1_ENTERED.remove(entered)
    before = await stored_keys(client)
    refused = await client.post(URL, json={"text": "one too many"}, headers=AUTH)
    assert statuses == [202, 202]
    assert refused.status == 429
    assert (await refused.json())["error"]["code"] == "rate_limited"
    assert refused.headers["Retry-After"] == "1"
    assert await stored_keys(client) == before
    assert await client.app[REDIS].llen(keys.prompt_queue("local", "nova")) <= 2


async def test_unknown_message_and_turn_are_404(client):
    for path in ("/api/messages/nope", "/api/turns/nope"):
        response = await client.get(path, headers=AUTH)
        assert response.status == 404
        assert (await response.json())["error"]["code"] == "not_found"


async def test_another_users_message_and_turn_are_not_visible(aiohttp_client, settings):
    from app.auth.accounts import add_user_sync
    from app.storage.migrations import apply_migrations
    from app.wiring.server import create_app

    conn = store_connection(settings)
    apply_migrations(conn)
    anna = {"Authorization": f"Bearer {add_user_sync(conn, 'anna', 'correct horse battery')}"}
    conn.close()
    app = create_app(settings, local_token=TOKEN)
    app[PIPELINES] = Pipelines(path1=_hold_path1, path2=_never)
    client = await aiohttp_client(app)
    body = await (await client.post(URL, json={"text": "mine"}, headers=AUTH)).json()
    mine = await client.get(f"/api/messages/{body['message_id']}", headers=AUTH)
    assert mine.status == 200
    theirs = await client.get(f"/api/messages/{body['message_id']}", headers=anna)
    assert theirs.status == 404
    turn_id = (await mine.json())["turn_id"]
    if turn_id is not None:
        assert (await client.get(f"/api/turns/{turn_id}", headers=anna)).status == 404


async def test_characters_lists_nova(client):
    response = await client.get("/api/characters", headers=AUTH)
    assert response.status == 200
    characters = await response.json()
    assert {"id": "nova", "name": "Nova"}.items() <= characters[0].items()


async def test_a_turn_and_its_messages_read_as_they_are_stored(fake_model, make_settings,
                                                               aiohttp_client):
    """`GET /api/messages/{id}` and `GET /api/turns/{id}` are built from typed records; their
    bodies are byte for byte the JSON of what Redis holds (the stored history entries, the
    hash's fields), as when the handlers passed the raw hashes on."""
    import json

    from app.api.app_keys import RECORDS
    from tests.pipeline_support import fake_app, open_chat
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    sent = await chat.send("Hallo")
    answer = await chat.response(sent)
    await chat.settle()
    redis, turn_id = app[REDIS], answer["turn_id"]

    stored = await redis.hgetall(keys.turn_record(turn_id))
    history = [json.loads(e) for e in await redis.lrange(keys.turn_history(turn_id), 0, -1)]
    turn = await chat.client.get(f"/api/turns/{turn_id}", headers=AUTH)
    assert await turn.text() == json.dumps({
        "turn_id": turn_id, "state": "delivered", "history": history,
        "message_ids": json.loads(stored["message_ids"]), "character_id": "nova",
        "origin": stored["origin"], "attempts": int(stored["attempts"])})
    assert [entry["state"] for entry in history] == ["queued", "path1", "path2", "delivered"]

    message = await chat.client.get(f"/api/messages/{sent}", headers=AUTH)
    assert await message.text() == json.dumps(
        {"message_id": sent, "turn_id": turn_id, "state": "delivered"})
    record = await app[RECORDS].message(sent)
    raw = await redis.hgetall(keys.message_record(sent))
    assert record is not None and (record.user_id, record.character_id, record.text) == (
        "local", "nova", "Hallo")
    assert record.received_at == float(raw["received_at"]) and record.turn_id == turn_id
    await chat.close()


async def test_a_queued_message_has_no_turn_yet(client):
    from app.api.app_keys import RECORDS
    from tests.pipeline_support import hold_pair
    hold = await hold_pair(client.app)
    body = await (await client.post(URL, json={"text": "warte"}, headers=AUTH)).json()
    record = await client.app[RECORDS].message(body["message_id"])
    assert record is not None and record.turn_id is None
    response = await client.get(f"/api/messages/{body['message_id']}", headers=AUTH)
    assert await response.text() == (
        f'{{"message_id": "{body["message_id"]}", "turn_id": null, "state": "accepted"}}')
    assert await client.app[REDIS].get(hold)
