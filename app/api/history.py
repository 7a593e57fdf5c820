"""The chat page's history (design §5 "The chat page", §9): the pair's durable message log and
the user's imported conversations, paged by a cursor and searched (`app.memory.history`).

- `GET /api/characters/{cid}/history?before=|after=|around=<cursor>&limit=` → `{"messages":
  [line…] oldest first, "older": cursor|null, "newer": cursor|null, "origins"}`: without a
  cursor the newest `limit` lines. Never more than `limit` (at most `HISTORY_MAX_LIMIT`).
- `GET /api/characters/{cid}/history/search?q=&before=<cursor>&limit=` → `{"hits": [line…]
  newest first, "next": cursor|null, "origins"}`.

`origins` is the server's table from a stored turn's `herkunft` to the `origin` a live
answer names, as `GET …/session` sends it. Every read names the caller: no other user's line
can be reached, whatever the cursor says.
"""

from __future__ import annotations

from aiohttp import web

from app.api.access import known_character
from app.api.app_keys import DB, SEARCHES, SETTINGS
from app.api.errors import ApiError
from app.api.middleware import USER_ID
from app.api.validation import query_limit, search_text
from app.api.wire import answer
from app.memory import history
from app.memory.turns import ORIGIN_OF_OCCASION

HISTORY_DEFAULT_LIMIT = 50
HISTORY_MAX_LIMIT = 200
SEARCH_DEFAULT_LIMIT = 20
SEARCH_MAX_LIMIT = 100
# A search text travels in the URL, whose line aiohttp takes up to 8 190 bytes: far more than
# anyone types into a search box, and a clear 413 instead of a refused request line.
SEARCH_MAX_CHARS = 1000
_CURSORS = ("before", "after", "around")


def _cursor(request: web.Request, name: str) -> history.Key | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    return history.parse_cursor(raw, name)


async def get_history(request: web.Request) -> web.Response:
    character_id = known_character(request)
    limit = query_limit(request, HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT)
    given = [name for name in _CURSORS if name in request.query]
    if len(given) > 1:
        raise ApiError(400, "invalid_request", f"give at most one of {', '.join(_CURSORS)}")
    cursors = {name: _cursor(request, name) for name in given}
    user_id = request[USER_ID]
    found = await request.app[DB].execute_fn(
        lambda conn: history.page(conn, user_id, character_id, limit=limit, **cursors)
    )
    return answer(
        {
            "messages": [line.view() for line in found.lines],
            "older": found.older,
            "newer": found.newer,
            "origins": ORIGIN_OF_OCCASION,
        }
    )


async def search_history(request: web.Request) -> web.Response:
    character_id = known_character(request)
    query = search_text(request, SEARCH_MAX_CHARS)
    limit = query_limit(request, SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT)
    before = _cursor(request, "before")
    user_id, budget = request[USER_ID], request.app[SETTINGS].search_scan_rows
    # A scan past its budget is refused as it is (`ScanTooLong`: 422 `search_too_broad`).
    async with request.app[SEARCHES].turn(user_id):
        hits, more = await request.app[DB].execute_search_fn(
            lambda conn: history.search(
                conn, user_id, character_id, query, limit=limit, before=before, budget=budget
            )
        )
    return answer(
        {"hits": [line.view() for line in hits], "next": more, "origins": ORIGIN_OF_OCCASION}
    )


def setup(app: web.Application) -> None:
    app.router.add_get("/api/characters/{cid}/history", get_history)
    app.router.add_get("/api/characters/{cid}/history/search", search_history)
