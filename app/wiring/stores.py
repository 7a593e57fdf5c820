"""Every store and service over Redis and SQLite, built once per process.

The server's `stores_ctx` (app/wiring/server.py) builds them when Redis, SQLite and the
identity registry are up and puts each under its typed app key (app/api/app_keys.py); the
handlers, the pipelines' `Services`, the runtime, the journal and the background loops share
those objects. Tests and benchmarks that run a room without the server build them here too,
so there is one way to make them. Nothing below the wiring constructs one
(tests/test_house_rules.py, "stores are built only in the wiring").
"""

from __future__ import annotations

from dataclasses import dataclass

import redis.asyncio as aioredis

from app.core.settings import Settings
from app.journal.media import MediaStore
from app.journal.store import JournalStore
from app.llm.privacy import IdentityRegistry
from app.memory.lists import ListStores
from app.memory.long_term import LongTermMemory
from app.memory.reminders import ReminderStore
from app.memory.session import SessionMemory
from app.memory.short_term import ShortTermMemory
from app.profiles.interaction.store import InteractionStore
from app.profiles.writing.service import ProfileService
from app.profiles.writing.store import ProfileStore
from app.storage.database import Database


@dataclass(frozen=True, slots=True)
class Stores:
    session: SessionMemory
    short_term: ShortTermMemory
    long_term: LongTermMemory
    reminders: ReminderStore
    lists: ListStores
    interactions: InteractionStore
    profiles: ProfileService
    journal: JournalStore
    media: MediaStore
    identities: IdentityRegistry


def build_stores(
    settings: Settings,
    redis: aioredis.Redis,
    db: Database,
    identities: IdentityRegistry | None = None,
) -> Stores:
    """The stores over `redis` and `db`; `identities` the process's one registry (the
    gateway's), a new one only where nothing else has one yet (a test of one room)."""
    identities = identities if identities is not None else IdentityRegistry(db)
    interactions = InteractionStore(db)
    return Stores(
        session=SessionMemory(redis, settings),
        short_term=ShortTermMemory(redis, settings),
        long_term=LongTermMemory(db),
        reminders=ReminderStore(redis),
        lists=ListStores(redis),
        interactions=interactions,
        profiles=ProfileService(ProfileStore(db), settings, identities, interactions),
        journal=JournalStore(db),
        media=MediaStore(db, settings),
        identities=identities,
    )
