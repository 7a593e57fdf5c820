"""What left this machine, for the logged-in user (issue 39 item 5; `app.llm.egress_log`):
one row per model call to an endpoint — counts and the endpoint's host, never text.

- `GET /api/privacy/egress?day=YYYY-MM-DD&purpose=&limit=&offset=` → `{"day", "purpose",
  "summary": {"calls", "remote_calls", "masked": {kind: n}, "refused": {"gate", "reply"},
  "tokens_in", "tokens_out", "endpoints": [{"endpoint", "provider", "remote", "calls"}]},
  "purposes": [the day's purposes], "calls": [call…] newest first, "next_offset": n|null}`;
  without `day` the user's today. The summary is of the whole day (of the purpose, if
  given); `calls` one page of it (`limit` 1–`EGRESS_MAX_LIMIT`, default
  `EGRESS_DEFAULT_LIMIT`).
- `GET /api/privacy/egress/days?limit=` → `{"days": [{"day", "calls"}]}`, newest first.
- `GET /api/privacy/egress/export?format=json|csv&day=&purpose=` → the rows as a download
  (streamed; oldest first; all days without `day`).
- `DELETE /api/privacy/egress` → `{"deleted": n}`: the user's log cleared.

Bad input → 400 in the error shape: `invalid_day` (not a date written YYYY-MM-DD),
`invalid_purpose` (not a purpose of the product, nor one in the user's rows), `invalid_limit`, `invalid_offset`,
`invalid_format`. Every read and the clear name the caller: no other user's row is reached.
"""

from __future__ import annotations

import functools

from aiohttp import web

from app.api.app_keys import DB, EGRESS_LOG
from app.api.downloads import streamed_download
from app.api.errors import ApiError
from app.api.middleware import USER_ID
from app.api.wire import answer
from app.core.clock import read_date
from app.llm.egress_log import EgressLog, export_chunks

EGRESS_DEFAULT_LIMIT = 50
EGRESS_MAX_LIMIT = 500
DAYS_DEFAULT_LIMIT = 60
DAYS_MAX_LIMIT = 3660
MAX_OFFSET = 10_000_000
EXPORT_FORMATS = {"json": "application/json", "csv": "text/csv"}


def _whole(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= high:
        raise ApiError(
            400, f"invalid_{name}", f"{name} must be a whole number from {low} to {high}"
        )
    return int(raw)


def _day(request: web.Request, egress: EgressLog, *, default_today: bool) -> str | None:
    raw = request.query.get("day")
    if raw is None:
        return egress.today() if default_today else None
    try:
        return read_date(raw)
    except ValueError as exc:
        raise ApiError(400, "invalid_day", str(exc)) from None


async def _purpose(request: web.Request, egress: EgressLog) -> str | None:
    raw = request.query.get("purpose") or None
    if raw is not None and not await egress.known_purpose(request[USER_ID], raw):
        raise ApiError(
            400, "invalid_purpose", f"{raw[:40]!r} is not a purpose this app asks a model for"
        )
    return raw


async def get_egress(request: web.Request) -> web.Response:
    egress = request.app[EGRESS_LOG]
    day = _day(request, egress, default_today=True)
    assert day is not None
    purpose = await _purpose(request, egress)
    limit = _whole(request, "limit", EGRESS_DEFAULT_LIMIT, 1, EGRESS_MAX_LIMIT)
    offset = _whole(request, "offset", 0, 0, MAX_OFFSET)
    return answer(await egress.day(request[USER_ID], day, purpose, limit=limit, offset=offset))


async def get_egress_days(request: web.Request) -> web.Response:
    limit = _whole(request, "limit", DAYS_DEFAULT_LIMIT, 1, DAYS_MAX_LIMIT)
    return answer({"days": await request.app[EGRESS_LOG].days(request[USER_ID], limit)})


async def export_egress(request: web.Request) -> web.StreamResponse:
    egress = request.app[EGRESS_LOG]
    fmt = request.query.get("format", "json")
    if fmt not in EXPORT_FORMATS:
        raise ApiError(400, "invalid_format", f"format {fmt[:20]!r}: use json or csv")
    day = _day(request, egress, default_today=False)
    purpose = await _purpose(request, egress)
    await egress.flush()
    chunks = request.app[DB].read_stream(
        functools.partial(
            export_chunks, user_id=request[USER_ID], day=day, purpose=purpose, fmt=fmt
        )
    )
    stem = "-".join(p for p in ("novaberg-egress", day, purpose) if p)
    return await streamed_download(request, chunks, f"{stem}.{fmt}", EXPORT_FORMATS[fmt])


async def clear_egress(request: web.Request) -> web.Response:
    deleted = await request.app[EGRESS_LOG].clear(request[USER_ID])
    return web.json_response({"deleted": deleted})


def setup(app: web.Application) -> None:
    app.router.add_get("/api/privacy/egress", get_egress)
    app.router.add_get("/api/privacy/egress/days", get_egress_days)
    app.router.add_get("/api/privacy/egress/export", export_egress)
    app.router.add_delete("/api/privacy/egress", clear_egress)
