"""The journal's wiring: its cleanup context (job runner: recovery at start, cancel on stop).

The offline model learns the journal's purposes when this module is imported.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from app.journal import offline  # noqa: F401 - registers the offline model's handlers
from app.journal.jobs import JournalJobs
from app.journal.store import JournalStore
from app.typedefs import DB, GATEWAY, HUB, JOURNAL, SETTINGS


async def journal_ctx(app: web.Application) -> AsyncIterator[None]:
    hub = app.get(HUB)
    jobs = JournalJobs(JournalStore(app[DB]), app[GATEWAY], app[SETTINGS],
                       hub.publish if hub is not None else None)
    await jobs.recover()
    app[JOURNAL] = jobs
    try:
        yield
    finally:
        await jobs.close()
