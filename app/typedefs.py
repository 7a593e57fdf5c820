"""Typed keys for everything the app object carries (no bare string keys)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from aiohttp import web

from app.auth import Auth
from app.llm import Gateway
from app.pipeline.characters import CharacterBook
from app.pipeline.impulses import ReminderClock
from app.pipeline.pixie.worker import PixieWorker
from app.runtime.characters import CharacterCatalog
from app.runtime.hub import Hub
from app.runtime.pipelines import Pipelines
from app.runtime.runtime import Runtime
from app.settings import Settings
from app.storage.database import Database


@dataclass(frozen=True, slots=True)
class RedisInfo:
    version: str
    embedded: bool


SETTINGS = web.AppKey("settings", Settings)
REDIS = web.AppKey("redis", aioredis.Redis)
REDIS_INFO = web.AppKey("redis_info", RedisInfo)
DB = web.AppKey("db", Database)
AUTH = web.AppKey("auth", Auth)
LOCAL_TOKEN = web.AppKey("local_token", str)
GATEWAY = web.AppKey("gateway", Gateway)
# turn runtime (app/runtime)
PIPELINES = web.AppKey("pipelines", Pipelines)
CHARACTERS = web.AppKey("characters", CharacterCatalog)
HUB = web.AppKey("hub", Hub)
RUNTIME = web.AppKey("runtime", Runtime)
# the character's pipelines (app/pipeline)
CHARACTER_BOOK = web.AppKey("character_book", CharacterBook)
REMINDER_CLOCK = web.AppKey("reminder_clock", ReminderClock)
# long-term memory (app/pipeline/pixie)
PIXIE = web.AppKey("pixie", PixieWorker)
PIPELINE_HOST = web.AppKey("pipeline_host", Any)
