"""Long-term memory end to end through the server (SPEC §3a; issue 14): tell a fact, reset
the session, ask about it — with the scripted fake model the responder's prompt holds the
fact, with the offline model the reply uses it. Promotion at and below the threshold; the
Pixie queue survives a kill; a turn arriving while the Pixie worker consolidates waits at
most one model call."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web

from app.memory import keys
from app.typedefs import PIXIE, REDIS
from tests.conftest import AUTH, TOKEN
from tests.pipeline_support import WAIT, Chat, fake_app, last_user_message, open_chat
from app.server import create_app

FACT = "Meine Schwester heißt Jana und wohnt in Leipzig."


async def memories(chat: Chat, query: str = "", **params: str) -> list[dict]:
    response = await chat.client.get(f"/api/characters/{chat.character_id}/memories",
                                     params={"q": query, **params}, headers=AUTH)
    assert response.status == 200, await response.text()
    return await response.json()


async def drained(chat: Chat) -> None:
    """Wait until the pair is idle and the Pixie queue (and its processing list) is empty."""
    await chat.settle()
    redis = chat.app[REDIS]
    worker = chat.app[PIXIE]
    async with asyncio.timeout(WAIT):
        while True:
            worker.wake()
            if not await redis.llen(keys.pixie_queue("local", "nova")) and \
                    not await redis.llen(keys.pixie_processing("local", "nova")) and \
                    not worker.busy:
                return
            await asyncio.sleep(0.02)


async def reset_session(chat: Chat) -> None:
    response = await chat.client.delete("/api/characters/nova/session", headers=AUTH)
    assert response.status == 204


async def test_offline_nova_knows_tomorrow_what_she_was_told_today(aiohttp_client, make_settings):
    app = create_app(make_settings(llm_provider="offline", pixie_poll_seconds=0.05),
                     local_token=TOKEN)
    chat = await open_chat(aiohttp_client, app)
    await chat.response(await chat.send(FACT))
    await drained(chat)
    kept = await memories(chat)
    assert [m["text"] for m in kept] == [FACT]
    assert kept[0]["kind"] == "person" and kept[0]["source_message_ids"]
    await reset_session(chat)
    assert await chat.session() == []
    answer = await chat.response(await chat.send("Wie heißt meine Schwester?"))
    assert "Jana" in answer["text"]
    assert (await memories(chat))[0]["last_used_at"] is not None
    await chat.close()
