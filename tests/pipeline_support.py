"""Test support for the pipeline and scenario tests: a real app over the fake model server
(or the offline provider), a WebSocket that records everything the server sends, and a
node context over real Redis, SQLite and gateway for node-level tests.

    chat = await open_chat(aiohttp_client, app)
    sent = await chat.send("Wie geht's dir?")
    answer = await chat.response(sent)           # the character_response naming that id
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient

from app.api.app_keys import REDIS, RUNTIME
from app.characters.book import CharacterBook
from app.core.settings import Settings
from app.llm import Gateway
from app.memory import keys
from app.pipeline.context import NodeContext, Services
from app.pipeline.prompts import PromptLibrary
from app.storage.database import Database
from app.wiring.purposes import OFFLINE_ANSWERS
from app.wiring.server import create_app
from app.wiring.stores import build_stores
from tests.conftest import AUTH, TOKEN
from tests.waiting import WAIT  # how long a test waits for what the server will send


@dataclass
class Chat:
    """A client of one user with one open WebSocket that records every message."""

    client: TestClient
    ws: Any
    character_id: str = "nova"
    seen: list[dict[str, Any]] = field(default_factory=list)
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    _reader: asyncio.Task[None] | None = None

    @property
    def app(self) -> web.Application:
        return self.client.app

    async def start(self) -> Chat:
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        async for message in self.ws:
            data = message.json()
            async with self._arrived:
                self.seen.append(data)
                self._arrived.notify_all()

    async def close(self) -> None:
        await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def send(self, text: str, character_id: str | None = None) -> str:
        response = await self.client.post(
            f"/api/characters/{character_id or self.character_id}/messages",
            json={"text": text}, headers=AUTH)
        assert response.status == 202, await response.text()
        return (await response.json())["message_id"]

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool], *, count: int = 1,
                       timeout: float = WAIT) -> list[dict[str, Any]]:
        async with asyncio.timeout(timeout):
            async with self._arrived:
                await self._arrived.wait_for(
                    lambda: len([m for m in self.seen if predicate(m)]) >= count)
        return [m for m in self.seen if predicate(m)]

    async def response(self, message_id: str | None = None, *, turn_id: str | None = None,
                       origin: str | None = None, count: int = 1) -> dict[str, Any]:
        """The `count`-th character_response naming `message_id` (or of `turn_id`, or of an
        origin); a turn_failed for it fails the test with its reason."""
        def matches(m: dict[str, Any]) -> bool:
            if message_id is not None and message_id not in m.get("message_ids", []):
                return False
            if turn_id is not None and m.get("turn_id") != turn_id:
                return False
            return origin is None or m.get("origin") == origin

        def done(m: dict[str, Any]) -> bool:
            return m["type"] in ("character_response", "turn_failed") and matches(m)

        found = await self.wait_for(done, count=count)
        failed = [m for m in found if m["type"] == "turn_failed"]
        assert not failed, f"turn failed: {failed[0]['reason']}"
        return found[count - 1]

    async def failure(self, message_id: str) -> dict[str, Any]:
        found = await self.wait_for(lambda m: m["type"] == "turn_failed"
                                    and message_id in m["message_ids"])
        return found[0]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.seen if m["type"] == kind]

    def stages(self, turn_id: str) -> list[str]:
        return [m["stage"] for m in self.seen
                if m["type"] == "character_stage" and m["turn_id"] == turn_id]

    async def get(self, path: str) -> Any:
        response = await self.client.get(path, headers=AUTH)
        assert response.status == 200, await response.text()
        return await response.json()

    async def session(self) -> list[dict[str, Any]]:
        return (await self.get(f"/api/characters/{self.character_id}/session"))["turns"]

    async def settle(self) -> None:
        """Wait until the runtime has nothing running (consumers, after-delivery steps)."""
        await self.app[RUNTIME].idle()


async def open_chat(aiohttp_client: Callable[..., Any], app: web.Application) -> Chat:
    client = await aiohttp_client(app)
    ws = await client.ws_connect("/api/ws", headers=AUTH)
    return await Chat(client=client, ws=ws).start()


def fake_app(fake_model: Any, make_settings: Callable[..., Settings],
             **overrides: Any) -> web.Application:
    return create_app(make_settings(**fake_model.overrides(**overrides)), local_token=TOKEN)


def purposes(fake_model: Any) -> list[str]:
    return [r.purpose for r in fake_model.chats()]


def last_user_message(request: Any) -> str:
    return [m["content"] for m in request.messages if m["role"] == "user"][-1]


def system_message(request: Any) -> str:
    return [m["content"] for m in request.messages if m["role"] == "system"][0]


async def hold_pair(app: web.Application, user_id: str = "local",
                    character_id: str = "nova") -> str:
    """Set the pair's turn marker as if another turn ran: events wait in the queue."""
    key = keys.turn_marker(user_id, character_id)
    await app[REDIS].set(key, "test-holder:held", ex=300)
    return key


@contextlib.asynccontextmanager
async def node_context(settings: Settings, redis: Any, tmp_path: Path, *,
                       character_id: str = "nova"
                       ) -> AsyncIterator[tuple[NodeContext, list[str]]]:
    """A node context over real Redis, a real SQLite file and the gateway of `settings` (its
    offline model answering as the product's does), and the list of stages it pushed."""
    db = Database(tmp_path / "nodes.sqlite3")
    await db.open()
    gateway = Gateway(settings, offline_answers=OFFLINE_ANSWERS)
    await gateway.start()
    book = CharacterBook(settings)
    character = book.get("local", character_id)
    assert character is not None
    stages: list[str] = []

    async def stage(name: str) -> None:
        stages.append(name)

    stores = build_stores(settings, redis, db)
    services = Services(settings=settings, redis=redis, db=db, characters=book,
                        prompts=PromptLibrary(settings), memory=stores.session,
                        short_term=stores.short_term, reminders=stores.reminders,
                        lists=stores.lists, long_term=stores.long_term,
                        interactions=stores.interactions)
    ctx = NodeContext(services=services, character=character, gateway=gateway, stage=stage,
                      guard=None, user_id="local")
    try:
        yield ctx, stages
    finally:
        await gateway.aclose()
        await db.close()
