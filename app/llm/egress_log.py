"""What left this machine (issue 39 item 5; seed 004 §16.6 "a persistent audit table
without prompt content"): one row per model call the gateway made to an endpoint, in the
store's `egress_log` table (`m014_egress_log`).

A row says when (the moment and the user's calendar day), which endpoint (its host and
port — never a user, password, path or query of its URL, never an API key) and model, what
for (the purpose), the tokens in and out, how many identities of each kind the masking
replaced, whether the egress gate or the reply check refused, the outcome, and whether the
endpoint is remote. It never holds a prompt, an answer, a name, a placeholder or the
mapping between them: `EgressCall` has no field that could carry one. A local endpoint's
calls are listed too, with nothing masked (its prompts are not masked, by design); the
offline model runs in this process and nothing leaves, so its calls are not rows; nor is a
call without its user (a remote one is refused before anything is sent).

Off the turn's path: `note` only appends to a list in memory; a background `Ticker` writes
what gathered in one transaction every `FLUSH_SECONDS` (sooner once `FLUSH_ROWS` wait), and
`stop` writes the rest. A read flushes first, so the user sees every call made so far. If
the store cannot take a batch, it is kept for the next round, up to `MAX_PENDING` rows
(then the oldest are dropped and the drop is logged: the log must never hold the turn up).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import msgspec

from app.core.background import Ticker
from app.core.clock import calendar_date
from app.core.log import fields
from app.storage.database import Database, stream_rows

log = logging.getLogger(__name__)

FLUSH_SECONDS = 2.0  # how long a noted call waits in memory at most before it is written
FLUSH_ROWS = 200  # this many waiting wake the writer at once
MAX_PENDING = 10_000  # kept in memory while the store refuses them; the oldest go beyond
REFUSALS = ("gate", "reply")  # the egress gate refused the request / the reply check the reply
EXPORT_COLUMNS = (
    "at",
    "day",
    "purpose",
    "provider",
    "endpoint",
    "model",
    "remote",
    "tokens_in",
    "tokens_out",
    "masked",
    "refused",
    "outcome",
    "error_code",
)
_COLUMNS = (
    "call_id, user_id, at, calendar_date, purpose, provider, endpoint, model, remote, "
    "tokens_in, tokens_out, masked_json, refused, outcome, error_code"
)
_READ = (
    "SELECT at, calendar_date, purpose, provider, endpoint, model, remote, tokens_in, "
    "tokens_out, masked_json, refused, outcome, error_code FROM egress_log"
)


class EgressCall(msgspec.Struct, frozen=True):
    """One call as the log keeps it: counts and names of machines, nothing of its text."""

    user_id: str
    at: float
    purpose: str
    provider: str
    endpoint: str
    model: str | None
    remote: bool
    tokens_in: int | None
    tokens_out: int | None
    masked: dict[str, int]  # kind → identities of that kind the masking replaced
    refused: str | None  # one of REFUSALS, or None
    outcome: str
    error_code: str | None


class EgressRow(msgspec.Struct, frozen=True):
    """A call as the user's log shows it (`GET /api/privacy/egress`, the JSON export; field
    order: the answer's key order): `day` is the user's calendar day of `at`."""

    at: float
    day: str
    purpose: str
    provider: str
    endpoint: str
    model: str | None
    remote: bool
    tokens_in: int | None
    tokens_out: int | None
    masked: dict[str, int]
    refused: str | None
    outcome: str
    error_code: str | None


class EndpointCalls(msgspec.Struct, frozen=True):
    endpoint: str
    provider: str
    remote: bool
    calls: int


class EgressSummary(msgspec.Struct, frozen=True):
    """A day in numbers (`summary`)."""

    calls: int
    remote_calls: int
    masked: dict[str, int]  # kind → identities replaced
    refused: dict[str, int]  # each of REFUSALS → calls refused so
    tokens_in: int
    tokens_out: int
    endpoints: list[EndpointCalls]


class EgressDay(msgspec.Struct, frozen=True):
    """One page of a day's calls with the day's summary (`EgressLog.day`)."""

    day: str
    purpose: str | None
    summary: EgressSummary
    purposes: list[str]  # every purpose of the day's calls
    calls: list[EgressRow]  # newest first
    next_offset: int | None


class DayCalls(msgspec.Struct, frozen=True):
    day: str
    calls: int


def endpoint_of(url: str | None) -> str:
    """The endpoint as the log names it: the URL's host and port only (a user and password
    in the URL, its path and query stay out); an IPv6 host in brackets."""
    parts = urlsplit(url or "")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        return f"{host}:{parts.port}"
    return host


class EgressLog:
    """The user's log of calls that left the process; `purposes` are the purposes a
    filter may name (the product's, from the wiring)."""

    def __init__(self, db: Database, zone: dt.tzinfo | None, purposes: Sequence[str]) -> None:
        self.db = db
        self.zone = zone
        self.purposes = frozenset(purposes)
        self._pending: list[EgressCall] = []
        self._ticker = Ticker("egress-log", self.flush, interval=FLUSH_SECONDS, logger=log)

    # --- writing ---------------------------------------------------------------------------

    def note(self, call: EgressCall) -> None:
        """Keep `call` for the next write (no I/O here: the gateway calls it on every call)."""
        self._pending.append(call)
        if len(self._pending) > MAX_PENDING:
            dropped = len(self._pending) - MAX_PENDING
            del self._pending[:dropped]
            log.warning(
                "egress log: the store took no rows; oldest dropped", extra=fields(dropped=dropped)
            )
        if len(self._pending) >= FLUSH_ROWS:
            self._ticker.wake()

    async def flush(self) -> int:
        """Write what was noted, in one transaction; returns the rows written."""
        rows, self._pending = self._pending, []
        if not rows:
            return 0
        values = [self._row(call) for call in rows]
        try:
            await self.db.execute_write_fn(
                lambda conn: conn.executemany(
                    f"INSERT INTO egress_log ({_COLUMNS}) VALUES ({', '.join('?' * 15)})", values
                )
            )
        except BaseException:
            self._pending[:0] = rows  # tried again next round (or by the next read)
            raise
        return len(rows)

    def _row(self, call: EgressCall) -> tuple[Any, ...]:
        masked = {kind: count for kind, count in call.masked.items() if count}
        return (
            uuid.uuid4().hex,
            call.user_id,
            call.at,
            calendar_date(call.at, self.zone),
            call.purpose,
            call.provider,
            call.endpoint,
            call.model,
            int(call.remote),
            call.tokens_in,
            call.tokens_out,
            json.dumps(masked, sort_keys=True),
            call.refused,
            call.outcome,
            call.error_code,
        )

    async def start(self) -> None:
        await self._ticker.start()

    async def stop(self) -> None:
        """End the writer, then write what is still waiting."""
        await self._ticker.stop()
        await self.flush()

    # --- reading ---------------------------------------------------------------------------

    def today(self) -> str:
        return calendar_date(time.time(), self.zone)

    async def day(
        self, user_id: str, day: str, purpose: str | None, *, limit: int, offset: int
    ) -> EgressDay:
        """The user's calls of `day` (optionally of one purpose), newest first, one page of
        `limit` from `offset`, with the day's summary over all of them (`summary`)."""
        await self.flush()
        return await self.db.execute_fn(
            lambda conn: _day(conn, user_id, day, purpose, limit, offset)
        )

    async def days(self, user_id: str, limit: int) -> list[DayCalls]:
        """The newest `limit` days with calls, with how many."""
        await self.flush()
        rows = await self.db.execute_fn(
            lambda conn: conn.execute(
                "SELECT calendar_date, COUNT(*) FROM egress_log WHERE user_id = ? "
                "GROUP BY calendar_date ORDER BY calendar_date DESC LIMIT ?",
                (user_id, limit),
            ).fetchall()
        )
        return [DayCalls(row[0], int(row[1])) for row in rows]

    async def known_purpose(self, user_id: str, purpose: str) -> bool:
        """A purpose a filter may name: one of the app's, or one the user's rows hold (a
        purpose a caller added without listing it is still shown and filtered)."""
        if purpose in self.purposes:
            return True
        await self.flush()
        row = await self.db.execute_fn(
            lambda conn: conn.execute(
                "SELECT 1 FROM egress_log WHERE user_id = ? AND purpose = ? LIMIT 1",
                (user_id, purpose),
            ).fetchone()
        )
        return row is not None

    async def clear(self, user_id: str) -> int:
        """Delete every row of the user's; returns how many."""
        await self.flush()
        return await self.db.execute_write_fn(
            lambda conn: (
                conn.execute("DELETE FROM egress_log WHERE user_id = ?", (user_id,)).rowcount
            )
        )


def _where(user_id: str, day: str | None, purpose: str | None) -> tuple[str, list[Any]]:
    clauses, params = ["user_id = ?"], [user_id]
    if day is not None:
        clauses.append("calendar_date = ?")
        params.append(day)
    if purpose is not None:
        clauses.append("purpose = ?")
        params.append(purpose)
    return " WHERE " + " AND ".join(clauses), params


def _wire(row: Any) -> EgressRow:
    return EgressRow(
        at=row[0],
        day=row[1],
        purpose=row[2],
        provider=row[3],
        endpoint=row[4],
        model=row[5],
        remote=bool(row[6]),
        tokens_in=row[7],
        tokens_out=row[8],
        masked=json.loads(row[9]),
        refused=row[10],
        outcome=row[11],
        error_code=row[12],
    )


def _day(
    conn: Any, user_id: str, day: str, purpose: str | None, limit: int, offset: int
) -> EgressDay:
    where, params = _where(user_id, day, purpose)
    everything = [_wire(row) for row in conn.execute(f"{_READ}{where} ORDER BY at DESC", params)]
    every_purpose = conn.execute(
        "SELECT DISTINCT purpose FROM egress_log WHERE user_id = ? AND calendar_date = ? "
        "ORDER BY purpose",
        (user_id, day),
    ).fetchall()
    page = everything[offset : offset + limit]
    return EgressDay(
        day=day,
        purpose=purpose,
        summary=summary(everything),
        purposes=[row[0] for row in every_purpose],
        calls=page,
        next_offset=offset + limit if offset + limit < len(everything) else None,
    )


def summary(calls: list[EgressRow]) -> EgressSummary:
    """The day in numbers: calls, masked identities by kind, refusals, tokens, and the
    calls per endpoint (remote or local)."""
    masked: dict[str, int] = {}
    refused = dict.fromkeys(REFUSALS, 0)
    endpoints: dict[tuple[str, str, bool], int] = {}
    for call in calls:
        for kind, count in call.masked.items():
            masked[kind] = masked.get(kind, 0) + count
        if call.refused in refused:
            refused[call.refused] += 1
        where = (call.endpoint, call.provider, call.remote)
        endpoints[where] = endpoints.get(where, 0) + 1
    return EgressSummary(
        calls=len(calls),
        remote_calls=sum(1 for call in calls if call.remote),
        masked=masked,
        refused=refused,
        tokens_in=sum(call.tokens_in or 0 for call in calls),
        tokens_out=sum(call.tokens_out or 0 for call in calls),
        endpoints=[
            EndpointCalls(endpoint, provider, remote, count)
            for (endpoint, provider, remote), count in sorted(endpoints.items())
        ],
    )


def export_chunks(
    conn: Any, user_id: str, day: str | None, purpose: str | None, fmt: str
) -> Iterator[bytes]:
    """The user's rows (of a day, a purpose, or all), oldest first, as JSON (one array) or
    CSV (a header line, then a line per call; `masked` as `KIND=n;…`), in chunks of rows as
    they are read (`Database.read_stream` runs it on a reader thread)."""
    where, params = _where(user_id, day, purpose)
    rows = stream_rows(conn, f"{_READ}{where} ORDER BY at", params)
    if fmt == "csv":
        yield from _csv_chunks(rows)
        return
    yield b"["
    first = True
    for row in rows:
        call = msgspec.to_builtins(_wire(row))
        yield (b"" if first else b",") + json.dumps(call, ensure_ascii=False).encode()
        first = False
    yield b"]\n"


def _csv_chunks(rows: Iterator[Any]) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    for row in rows:
        call = msgspec.to_builtins(_wire(row))
        call["masked"] = ";".join(f"{k}={v}" for k, v in sorted(call["masked"].items()))
        call["remote"] = int(call["remote"])
        writer.writerow([call[column] for column in EXPORT_COLUMNS])
        if buffer.tell() > 16_384:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()
