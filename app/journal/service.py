"""The journal in the app: `journal_ctx`, the job runner as one cleanup context (recovery of
jobs a dead process left open at start, running jobs cancelled and marked failed on stop).
What the offline model answers for the journal is registered by the wiring (`app.purposes`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

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
