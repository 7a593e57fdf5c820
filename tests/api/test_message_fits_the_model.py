"""Issue 11, item 9: a message the current model cannot take at all is refused when it is
sent (413 `message_too_long_for_model`, with the limit), instead of being accepted and then
always failing with `prompt_budget_exceeded`."""

from __future__ import annotations

from app.llm.budget import message_chars_limit
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN

URL = "/api/characters/nova/messages"


async def test_a_message_too_long_for_a_small_window_is_413_with_the_limit(
        aiohttp_client, make_settings):
    settings = make_settings(llm_provider="openai", llm_url="http://127.0.0.1:9",
                             llm_model="m", llm_context=4096)
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    limit = message_chars_limit(window=4096, reserved_output=settings.responder_max_tokens,
                                chars_per_token=settings.chars_per_token,
                                margin=settings.budget_safety_margin)
    assert 0 < limit < settings.max_message_chars
    info = await (await client.get("/api/llm", headers=AUTH)).json()
    assert info["message_limit"] == limit  # what the UI shows before sending

    refused = await client.post(URL, json={"text": "x" * (limit + 1)}, headers=AUTH)
    assert refused.status == 413
    error = (await refused.json())["error"]
    assert error["code"] == "message_too_long_for_model" and str(limit) in error["message"]
    session = await (await client.get("/api/characters/nova/session", headers=AUTH)).json()
    assert session["turns"] == []  # nothing was written

    accepted = await client.post(URL, json={"text": "x" * limit}, headers=AUTH)
    assert accepted.status == 202


async def test_the_offline_model_takes_the_longest_message(client, settings):
    info = await (await client.get("/api/llm", headers=AUTH)).json()
    assert info["message_limit"] >= settings.max_message_chars
    accepted = await client.post(URL, json={"text": "x" * settings.max_message_chars},
                                 headers=AUTH)
    assert accepted.status == 202
