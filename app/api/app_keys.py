"""Typed keys for everything the app object carries (no bare string keys).

A protocol module: it names the types of the services `app.wiring.server` builds and wires, but
imports none of the layers at run time (only for type checkers). Only the wiring
(`app.wiring.server`, `app.wiring.cli`) and the API read the keys; the layers below get what they use
handed in (tests/test_layers.py holds both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import redis.asyncio as aioredis
from aiohttp import web

from app.core.settings import Settings

if TYPE_CHECKING:
    from app.auth.credentials import Auth
    from app.backup.service import BackupService
    from app.characters.book import CharacterBook
    from app.characters.catalog import CharacterCatalog
    from app.characters.store import CharacterStore
    from app.consolidation.worker import PixieWorker
    from app.core.admission import RoundAdmission
    from app.impulses.clock import ReminderClock
    from app.journal.jobs import JournalJobs
    from app.journal.media import MediaStore
    from app.journal.store import JournalStore
    from app.llm import Gateway
    from app.llm.privacy import IdentityRegistry
    from app.memory.lists import ListStores
    from app.memory.long_term import LongTermMemory
    from app.memory.reminders import ReminderStore
    from app.memory.session import SessionMemory
    from app.memory.short_term import ShortTermMemory
    from app.pipeline.graph import GraphRun
    from app.pipeline.service import PipelineHost
    from app.pipeline.vocabulary import Pipelines
    from app.profiles.interaction.store import InteractionStore
    from app.profiles.writing.service import ProfileService
    from app.runtime.hub import Hub
    from app.runtime.keeper import Keeper
    from app.runtime.records import RecordReads
    from app.runtime.runtime import Runtime
    from app.storage.database import Database


@dataclass(frozen=True, slots=True)
class RedisInfo:
    version: str
    embedded: bool


SETTINGS = web.AppKey("settings", Settings)
REDIS = web.AppKey("redis", aioredis.Redis)
REDIS_INFO = web.AppKey("redis_info", RedisInfo)
REDIS_URL = web.AppKey("redis_url", str)  # the one in use: the setting's or the embedded one's
DB: web.AppKey[Database] = web.AppKey("db")
AUTH: web.AppKey[Auth] = web.AppKey("auth")
ADMISSION: web.AppKey[RoundAdmission] = web.AppKey("admission")  # requests begun per loop round
LOCAL_TOKEN = web.AppKey("local_token", str)
GATEWAY: web.AppKey[Gateway] = web.AppKey("gateway")
PRIVACY: web.AppKey[IdentityRegistry] = web.AppKey("privacy")  # users' identity registries
# The stores and services over Redis and SQLite, each built once (`app.wiring.server.stores_ctx`)
# and shared by the handlers, the pipelines, the journal and the background loops.
SESSION: web.AppKey[SessionMemory] = web.AppKey("session")  # a pair's turns and summary
SHORT_TERM: web.AppKey[ShortTermMemory] = web.AppKey("short_term")
LONG_TERM: web.AppKey[LongTermMemory] = web.AppKey("long_term")
REMINDERS: web.AppKey[ReminderStore] = web.AppKey("reminders")
LISTS: web.AppKey[ListStores] = web.AppKey("lists")  # each pair's named lists
INTERACTIONS: web.AppKey[InteractionStore] = web.AppKey("interactions")  # interaction profile
PROFILES: web.AppKey[ProfileService] = web.AppKey("profiles")  # the writing profile
JOURNAL_STORE: web.AppKey[JournalStore] = web.AppKey("journal_store")
MEDIA: web.AppKey[MediaStore] = web.AppKey("media")  # the journal's photos
# turn runtime (app/runtime)
# The pipelines in use: the product's, set at start-up unless a test or bench installed others
# before the app started.
PIPELINES: web.AppKey[Pipelines] = web.AppKey("pipelines")
CHARACTERS: web.AppKey[CharacterCatalog] = web.AppKey("characters")
HUB: web.AppKey[Hub] = web.AppKey("hub")
RUNTIME: web.AppKey[Runtime] = web.AppKey("runtime")
RECORDS: web.AppKey[RecordReads] = web.AppKey("records")  # what the API reads of turns, messages
KEEPER: web.AppKey[Keeper] = web.AppKey("keeper")  # heartbeat, marker refresh, death watch
# the character's pipelines (app/pipeline)
CHARACTER_BOOK: web.AppKey[CharacterBook] = web.AppKey("character_book")
CHARACTER_STORE: web.AppKey[CharacterStore] = web.AppKey("character_store")  # users' own
REMINDER_CLOCK: web.AppKey[ReminderClock] = web.AppKey("reminder_clock")
# backup, restore, export (app/backup)
BACKUPS: web.AppKey[BackupService] = web.AppKey("backups")
# the journal (app/journal)
JOURNAL: web.AppKey[JournalJobs] = web.AppKey("journal")
# long-term memory (app/consolidation)
PIXIE: web.AppKey[PixieWorker] = web.AppKey("pixie")
PIPELINE_HOST: web.AppKey[PipelineHost] = web.AppKey("pipeline_host")
# Told what each completed path run took (bench/turn.py, tests); set before the app starts.
PATH_RUN_OBSERVER: web.AppKey[Callable[[GraphRun], None]] = web.AppKey("path_run_observer")
