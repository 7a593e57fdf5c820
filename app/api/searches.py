"""Searches, per user, in bounds (issue 38 item 7: eight parallel two-letter searches of
one user made another user's history page wait 10.65 s).

- At most `SEARCHES_PER_USER` of a user's searches run at once; up to
  `SEARCHES_WAITING_PER_USER` more wait for their turn; one beyond that is refused at once,
  429 `too_many_searches` with `Retry-After` — nothing of it ran.
- The searches run on the database's search lane (`Database.execute_search_fn`), so the
  ordinary reads (a history page, the journal) never wait behind them, whatever everyone
  searches.
- A substring scan has a budget of rows (setting `search_scan_rows`,
  `app.memory.history.ScanTooLong`): past it the search is refused, 422
  `search_too_broad`, instead of reading a whole long history.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from app.core.refusal import RefusedKind

SEARCHES_PER_USER = 2
SEARCHES_WAITING_PER_USER = 4
RETRY_AFTER_SECONDS = 1


@dataclass(slots=True)
class _UserSearches:
    running: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(SEARCHES_PER_USER))
    admitted: int = 0  # running and waiting


class TooManySearches(RefusedKind):
    """One search more than a user may run and wait for at once; nothing of it ran."""

    STATUS, CODE = 429, "too_many_searches"


class SearchLimiter:
    """Each user's searches: how many run and wait (see the module docstring)."""

    def __init__(self) -> None:
        self._users: dict[str, _UserSearches] = {}

    def admitted(self, user_id: str) -> int:
        """How many of the user's searches run or wait now."""
        searches = self._users.get(user_id)
        return searches.admitted if searches is not None else 0

    @contextlib.asynccontextmanager
    async def turn(self, user_id: str) -> AsyncIterator[None]:
        """Wait for one of the user's places to search; 429 when too many wait already."""
        searches = self._users.setdefault(user_id, _UserSearches())
        if searches.admitted >= SEARCHES_PER_USER + SEARCHES_WAITING_PER_USER:
            raise TooManySearches(
                f"{searches.admitted} of your searches are running or waiting; "
                "wait for them, then search again",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        searches.admitted += 1
        try:
            async with searches.running:
                yield
        finally:
            searches.admitted -= 1
            if searches.admitted == 0:
                self._users.pop(user_id, None)
