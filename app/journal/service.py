"""The journal in the app: what `create_app` installs.

- `install(app)`: teaches the offline model the journal's purposes (`app.journal.offline`);
- `journal_ctx`: the job runner, one cleanup context (recovery of jobs a dead process left
  open at start, running jobs cancelled and marked failed on stop).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from app.journal import offline
from app.journal.profile import review
from app.journal.jobs import JournalJobs
from app.journal.store import JournalStore
from app.typedefs import DB, GATEWAY, HUB, JOURNAL, SETTINGS


def install(app: web.Application) -> None:
    offline.register_handlers()
    review.register_handlers()  # the writing profile's AI review


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
