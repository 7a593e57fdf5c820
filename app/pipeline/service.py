"""The character's pipelines as the runtime calls them (SPEC §6): `PipelineHost` runs path 1,
path 2 and the after-delivery step over the app's services, and hands the runtime its
`Pipelines` (`app.pipeline.vocabulary` is the contract).

The wiring (`app.wiring.server`) builds the host with the character book when the app is built,
connects it to Redis, SQLite and the model gateway once they are up (`connect`), and tells
it the reminder clock and the Pixie worker once they run (a new reminder wakes the clock, a
promotion trigger and the memories a prompt used go to the worker).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import redis.asyncio as aioredis

from app.characters.book import CharacterBook, CharacterDefinition
from app.core.i18n import FALLBACK_LANGUAGE
from app.core.log import fields
from app.core.settings import Settings
from app.interaction import profile as interaction
from app.interaction.store import InteractionStore
from app.llm import Gateway
from app.memory.state import CharacterState
from app.pipeline.agents.follow_up import read_context
from app.pipeline.context import NodeContext, Services
from app.pipeline.graph import GraphRun, run_graph
from app.pipeline.path1 import PATH1, result_of
from app.pipeline.path2 import PATH2
from app.pipeline.prompts import PromptLibrary
from app.pipeline.state import Path1State, Path2State
from app.pipeline.vocabulary import (
    CharacterRun,
    Path1Result,
    Path2Result,
    PipelineContext,
    Pipelines,
    TurnRejected,
    UserBlock,
)
from app.storage.database import Database

log = logging.getLogger(__name__)


class Wakeable(Protocol):
    """A background loop a turn may wake (the reminder clock, `app.impulses`)."""

    def wake(self) -> None: ...


class MemoryWorker(Wakeable, Protocol):
    """The consolidation worker (`app.pixie`): woken by a promotion trigger, told which
    memories a prompt used."""

    def note_used(self, memory_ids: list[str], at: float) -> None: ...

NO_CHARACTER = "no_active_character"


class PipelineHost:
    """Path 1, path 2 and the after-delivery step over the app's services.

    `on_path_run`, when set, is told what each completed path run took (bench/turn.py
    reads its figures there)."""

    def __init__(self, settings: Settings, characters: CharacterBook) -> None:
        self.settings = settings
        self.characters = characters
        self.on_path_run: Callable[[GraphRun], None] | None = None
        self.clock: Wakeable | None = None
        self.pixie: MemoryWorker | None = None
        self._services: Services | None = None
        self._gateway: Gateway | None = None

    def connect(self, redis: aioredis.Redis, db: Database, gateway: Gateway) -> None:
        """Redis, SQLite and the model gateway, once the app has started them."""
        self._gateway = gateway
        self._services = Services(
            settings=self.settings, redis=redis, db=db, characters=self.characters,
            prompts=PromptLibrary(self.settings), wake_clock=self._wake_clock,
            wake_pixie=self._wake_pixie, memories_used=self._memories_used)

    @property
    def services(self) -> Services:
        if self._services is None:
            raise RuntimeError("the pipelines' services exist once the app has started")
        return self._services

    def _wake_clock(self) -> None:
        if self.clock is not None:
            self.clock.wake()

    def _wake_pixie(self) -> None:
        if self.pixie is not None:
            self.pixie.wake()

    def _memories_used(self, memory_ids: list[str], at: float) -> None:
        if self.pixie is not None:
            self.pixie.note_used(memory_ids, at)

    def background_context(self, user_id: str, character_id: str) -> NodeContext:
        """A context for model calls outside a turn (the Pixie worker): no stages to push,
        no turn to guard, the gateway in use now."""
        character = self.services.characters.get(character_id) or stand_in(character_id)

        async def no_stage(name: str) -> None:
            return None

        assert self._gateway is not None
        return NodeContext(services=self.services, character=character,
                           gateway=self._gateway, stage=no_stage, guard=None,
                           user_id=user_id)

    def context(self, ctx: PipelineContext, character: CharacterDefinition,
                user_id: str) -> NodeContext:
        return NodeContext(services=self.services, character=character, gateway=ctx.gateway,
                           stage=ctx.stage, guard=ctx.guard, user_id=user_id)

    async def path1(self, ctx: PipelineContext, block: UserBlock) -> Path1Result:
        # Without an active character the user's words are still perceived and kept
        # (seed 001 §6.7): only path 2 needs the character.
        character = (self.services.characters.get(block.character_id)
                     or stand_in(block.character_id))
        state = Path1State(turn_id=block.turn_id, user_id=block.user_id,
                           character_id=block.character_id, message_ids=list(block.message_ids),
                           text=block.text, said_at=block.received_at[-1])
        self._ran(await run_graph("path1", PATH1, self.context(ctx, character, block.user_id),
                                  state, turn_id=block.turn_id))
        return result_of(state)

    async def path2(self, ctx: PipelineContext, run: CharacterRun) -> Path2Result:
        character = self.services.characters.get(run.character_id)
        if character is None:
            log.warning("no active character for the event; the turn ends with a notice",
                        extra=fields(character_id=run.character_id, turn_id=run.turn_id))
            raise TurnRejected(NO_CHARACTER, f"character {run.character_id!r} is not active")
        state = Path2State(turn_id=run.turn_id, user_id=run.user_id,
                           character_id=run.character_id, message_ids=list(run.message_ids),
                           origin=run.origin, source=run.event.source,
                           trigger_count=run.event.trigger_count, payload=run.event.payload,
                           pending=read_context(run.pending_agent))
        node_ctx = self.context(ctx, character, run.user_id)
        node_ctx.interaction_hint = interaction.hint(
            await InteractionStore(self.services.db).current(run.user_id), character.language)
        self._ran(await run_graph("path2", PATH2, node_ctx, state, turn_id=run.turn_id))
        return Path2Result(text=state.answer, origin=run.origin, emotion=state.state.emotion,
                           arousal=state.state.arousal, follow_up=state.follow_up)

    def _ran(self, run: GraphRun) -> None:
        if self.on_path_run is not None:
            self.on_path_run(run)

    async def after_delivery(self, ctx: PipelineContext, run: CharacterRun,
                             result: Path2Result) -> None:
        """The session summary check, outside the run lock (SPEC §3)."""
        character = self.services.characters.get(run.character_id) or stand_in(run.character_id)
        await self.services.memory.summarize_if_needed(
            run.user_id, run.character_id, ctx.gateway, character_name=character.name,
            language=character.language)

    def pipelines(self) -> Pipelines:
        return Pipelines(path1=self.path1, path2=self.path2, after_delivery=self.after_delivery)


def stand_in(character_id: str) -> CharacterDefinition:
    """Name and language for a character without a definition (path 1 only)."""
    return CharacterDefinition(id=character_id, name=character_id.capitalize(),
                               language=FALLBACK_LANGUAGE, persona="", description="",
                               baseline=CharacterState(), source="stand-in")
