"""What every node gets besides its state: the services and the one way to call the model.

`Services` is built once per app (Redis, SQLite, characters, prompts, and each store once).
`NodeContext` is built per run, whole: the character the run is for, the run's stage callback
(`character_stage` to every tab), the turn's commit guard, the user's interaction hint, and
`ask()` — every model call of a node goes through it, so each call has its own purpose, its
own prompt template and its output reserve from the `PURPOSES` table, and its duration is
counted for the run's log line and the benchmark.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import redis.asyncio as aioredis

from app.characters.book import CharacterBook, CharacterDefinition
from app.core.settings import Settings
from app.llm.types import Completion
from app.memory.commit import TurnGuard
from app.memory.lists import ListStores
from app.memory.long_term import LongTermMemory
from app.memory.message_log import LogOutbox, MessageLog
from app.memory.reminders import ReminderStore
from app.memory.session import SessionMemory
from app.memory.short_term import ShortTermMemory
from app.pipeline.prompts import PURPOSES, Blocks, PromptLibrary, blocks_for
from app.profiles.interaction.store import InteractionStore
from app.storage.database import Database

Stage = Callable[[str], Awaitable[None]]


@dataclass(slots=True)
class Services:
    """App-wide parts the pipelines use, handed in by the wiring, which builds each store
    once and shares it with the API (`memory`, `short_term`, `reminders`, `lists`,
    `long_term`, `interactions`); `message_log` and its `log_outbox` are the pipelines' own.

    The wake-ups reach background loops that start after the runtime (the reminder clock, the
    Pixie worker): callables that exist from the start, handed in by the wiring."""

    settings: Settings
    redis: aioredis.Redis
    db: Database
    characters: CharacterBook
    prompts: PromptLibrary
    memory: SessionMemory
    short_term: ShortTermMemory
    reminders: ReminderStore
    lists: ListStores
    long_term: LongTermMemory
    interactions: InteractionStore
    wake_clock: Callable[[], None] = lambda: None  # a reminder was added: re-read the index
    wake_pixie: Callable[[], None] = lambda: None  # a promotion trigger waits
    # long-term memories a prompt used (ids, when): the Pixie worker marks them
    memories_used: Callable[[list[str], float], None] = lambda ids, at: None
    clock: Callable[[], float] = time.time  # wall-clock now (epoch seconds)
    message_log: MessageLog = field(init=False)
    log_outbox: LogOutbox = field(init=False)

    def __post_init__(self) -> None:
        self.message_log = MessageLog(self.db)
        self.log_outbox = LogOutbox(self.redis, self.message_log, self.settings)


@dataclass(frozen=True, slots=True)
class ModelCall:
    purpose: str
    seconds: float


@dataclass(slots=True)
class NodeContext:
    services: Services
    character: CharacterDefinition
    gateway: Any  # app.llm.Gateway, the one in use for this run
    stage: Stage
    guard: TurnGuard | None  # the running turn's commit guard (`app.memory.commit`)
    user_id: str  # whose run: the privacy gateway masks with this user's people
    calls: list[ModelCall] = field(default_factory=list)
    interaction_hint: str = ""  # the user's interaction profile (app.profiles.interaction)

    @property
    def settings(self) -> Settings:
        return self.services.settings

    @property
    def language(self) -> str:
        return self.character.language

    @property
    def persona(self) -> str:
        """The character's persona as the model gets it: its card's macros resolved."""
        return self.character.prompt_persona

    @property
    def blocks(self) -> Blocks:
        return blocks_for(self.character.language)

    @property
    def model_seconds(self) -> float:
        return sum(call.seconds for call in self.calls)

    async def ask(self, purpose: str, frame: str, *, max_tokens: int | None = None) -> Completion:
        """One model call: the purpose's template as the system message, `frame` as the user
        message, the purpose's schema and output reserve. Raises `ModelError`."""
        spec = PURPOSES[purpose]
        messages = self.services.prompts.messages(
            purpose,
            self.language,
            frame,
            character_name=self.character.name,
            persona=self.persona,
            interaction_hint=self.interaction_hint,
        )
        reserve = max_tokens or spec.max_tokens or self.settings.responder_max_tokens
        started = time.perf_counter()
        try:
            return await self.gateway.complete(
                purpose,
                messages,
                schema=spec.schema,
                max_tokens=reserve,
                temperature=spec.temperature,
                user_id=self.user_id,
            )
        finally:
            self.calls.append(ModelCall(purpose, time.perf_counter() - started))

    async def ask_struct(self, purpose: str, frame: str) -> Any:
        """A structured call's validated value (the purpose's schema instance)."""
        completion = await self.ask(purpose, frame)
        value = completion.value
        assert isinstance(value, msgspec.Struct), f"{purpose} has no schema"
        return value


def reply_language(ctx: NodeContext, state: Any) -> str:
    """What an agent's own sentences are said in: the user's language as perceived (a user
    writing English to a German character gets "Milk is now on the list"), else the
    character's."""
    return getattr(state, "expected_language", "") or ctx.language
