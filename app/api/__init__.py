"""HTTP and WebSocket handlers: validate, call, answer. No prompts, no Redis keys here."""

from __future__ import annotations

from aiohttp import web

from app.api import (
    characters, health, lists, llm, llm_settings, login, memories, messages, pages, reminders,
    ws,
)
from app.api import backups
from app.api import journal
from app.api import profile
from app.api import interaction
from app.api import privacy


def setup_routes(app: web.Application) -> None:
    health.setup(app)
    login.setup(app)
    pages.setup(app)
    messages.setup(app)
    characters.setup(app)
    ws.setup(app)
    llm.setup(app)
    llm_settings.setup(app)
    reminders.setup(app)
    lists.setup(app)
    backups.setup(app)
    journal.setup(app)
    profile.setup(app)
    interaction.setup(app)
    privacy.setup(app)
    memories.setup(app)
