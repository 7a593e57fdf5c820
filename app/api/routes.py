"""Every route of the API, one `setup` per handler module."""

from __future__ import annotations

from aiohttp import web

from app.api import (
    backups,
    characters,
    egress,
    health,
    history,
    interaction,
    journal,
    lists,
    llm,
    llm_settings,
    login,
    memories,
    messages,
    pages,
    privacy,
    profile,
    reminders,
    ws,
)


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
    egress.setup(app)
    memories.setup(app)
    history.setup(app)
