"""The identity registry: the people a user names, per user, in SQLite (table
`privacy_identities`, migration `m004_privacy_identities`).

Reads are cached per user as a compiled `NameIndex`; `replace` writes through the one
writer and drops the cache. The deprecated sources — the setting `privacy_identities` and
`identities.txt` in the data dir — are imported once at start-up (`import_legacy`), into
every user that exists then, and recorded in `privacy_legacy_imports` so they are never
imported again.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

import msgspec

from app.core.log import fields
from app.core.user_names import LOCAL_USER
from app.llm.privacy.names import NameIndex
from app.storage.database import Database

log = logging.getLogger(__name__)

LEGACY_FILE = "identities.txt"


class Person(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    aliases: list[str] = []

    def names(self) -> list[str]:
        return [self.name, *self.aliases]


class IdentityRegistry:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._cache: dict[str, tuple[list[Person], NameIndex]] = {}

    async def people(self, user_id: str) -> list[Person]:
        return (await self._load(user_id))[0]

    async def index(self, user_id: str) -> NameIndex:
        return (await self._load(user_id))[1]

    async def _load(self, user_id: str) -> tuple[list[Person], NameIndex]:
        cached = self._cache.get(user_id)
        if cached is None:
            people = await self.db.execute_fn(lambda conn: _read(conn, user_id))
            index = NameIndex([p.name for p in people], [a for p in people for a in p.aliases])
            cached = (people, index)
            # A shared store (PostgreSQL) is changed by other processes too: each turn reads
            # the registry as it stands there, or a name registered elsewhere goes unmasked.
            if self.db.engine == "sqlite":
                self._cache[user_id] = cached
        return cached

    async def replace(self, user_id: str, people: list[Person]) -> list[Person]:
        """Store `people` as the user's whole registry (one transaction)."""
        await self.db.execute_write_fn(lambda conn: _write(conn, user_id, people))
        self._cache.pop(user_id, None)
        return await self.people(user_id)

    async def import_legacy(self, data_dir: Path | None, configured: str | None) -> int:
        """Import the deprecated setting and file once; returns the names imported."""
        sources = _legacy_sources(data_dir, configured)
        if not sources:
            return 0
        imported = await self.db.execute_write_fn(lambda conn: _import(conn, sources))
        self._cache.clear()
        if imported:
            log.warning(
                "privacy: imported the deprecated identity list into the registry; "
                "edit people in the settings (or PUT /api/privacy/identities) from now on",
                extra=fields(sources=sorted(sources), names=imported),
            )
        else:
            log.warning(
                "privacy: the deprecated identity list was imported before and is "
                "ignored; the registry is the one place for names",
                extra=fields(sources=sorted(sources)),
            )
        return imported


def _read(conn: sqlite3.Connection, user_id: str) -> list[Person]:
    rows = conn.execute(
        "SELECT name, aliases FROM privacy_identities WHERE user_id = ? ORDER BY position",
        (user_id,),
    ).fetchall()
    return [Person(row["name"], json.loads(row["aliases"])) for row in rows]


def _write(conn: sqlite3.Connection, user_id: str, people: Iterable[Person]) -> None:
    conn.execute("DELETE FROM privacy_identities WHERE user_id = ?", (user_id,))
    conn.executemany(
        "INSERT INTO privacy_identities (user_id, position, name, aliases, updated_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (user_id, position, p.name, json.dumps(p.aliases, ensure_ascii=False), time.time())
            for position, p in enumerate(people)
        ],
    )


def _legacy_sources(data_dir: Path | None, configured: str | None) -> dict[str, list[str]]:
    sources: dict[str, list[str]] = {}
    setting = [n.strip() for n in (configured or "").split(",") if len(n.strip()) >= 2]
    if setting:
        sources["setting:privacy_identities"] = setting
    path = data_dir / LEGACY_FILE if data_dir else None
    if path is not None and path.is_file():
        lines = path.read_text(encoding="utf-8").splitlines()
        names = [line.split("#", 1)[0].strip() for line in lines]
        if named := [n for n in names if len(n) >= 2]:
            sources[f"file:{LEGACY_FILE}"] = named
    return sources


def _import(conn: sqlite3.Connection, sources: dict[str, list[str]]) -> int:
    done = {row[0] for row in conn.execute("SELECT source FROM privacy_legacy_imports")}
    new = {source: names for source, names in sources.items() if source not in done}
    if not new:
        return 0
    users = [row[0] for row in conn.execute("SELECT user_id FROM users")]
    imported = 0
    for user_id in dict.fromkeys([LOCAL_USER, *users]):
        people = _read(conn, user_id)
        known = {n.casefold() for p in people for n in p.names()}
        for names in new.values():
            for name in names:
                if name.casefold() not in known:
                    known.add(name.casefold())
                    people.append(Person(name))
                    imported += 1
        _write(conn, user_id, people)
    conn.executemany(
        "INSERT INTO privacy_legacy_imports (source, imported_at, names) VALUES (?, ?, ?)",
        [(source, time.time(), len(names)) for source, names in new.items()],
    )
    return imported
