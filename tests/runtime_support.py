"""Support for the runtime tests: a real app whose pipelines are the runtime's minimal ones
(path 1 stores the user turn, path 2 makes exactly one `responder` call to the fake model
server), so each test scripts one model answer per turn and looks at the runtime alone.

The chat client (`open_chat`, `Chat`) is the one of `tests.pipeline_support`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from app.api.app_keys import CHARACTERS, PIPELINES, REDIS
from app.characters.catalog import Character, CharacterCatalog
from app.core.settings import Settings
from app.memory import keys
from app.pipeline.vocabulary import Pipelines
from app.runtime.minimal import minimal_pipelines
from app.wiring.server import create_app
from tests.conftest import TOKEN

CATALOG = CharacterCatalog([Character(id="nova", name="Nova"), Character(id="luna", name="Luna")])


def runtime_app(fake_model: Any, make_settings: Callable[..., Settings], *,
                pipelines: Pipelines | None = None, **overrides: Any) -> web.Application:
    """The real app over the fake model, with the minimal pipelines and two characters."""
    settings = make_settings(**fake_model.overrides(**overrides))
    app = create_app(settings, local_token=TOKEN)
    app[PIPELINES] = pipelines or minimal_pipelines()
    app[CHARACTERS] = CATALOG
    return app


def responders(fake_model: Any) -> list[Any]:
    return fake_model.chats("responder")


def user_prompt(request: Any) -> str:
    return [m["content"] for m in request.messages if m["role"] == "user"][-1]


async def marker(app: web.Application, character_id: str = "nova") -> str | None:
    return await app[REDIS].get(keys.turn_marker("local", character_id))
