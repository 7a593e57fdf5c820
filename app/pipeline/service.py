"""The character's pipelines in the app: what `create_app` installs (SPEC §6).

- `install(app)`: the character book (built-in `nova` plus the data dir's definitions), the
  catalog the API and the runtime consult, and path 1 / path 2 / after-delivery as the
  runtime's `Pipelines` (`app.pipeline.vocabulary` is the contract).
- `reminder_clock_ctx`: the reminder clock, one background task, started after the runtime
  (it submits impulses through it) and stopped before it.
- `pixie_ctx`: the Pixie worker (long-term memory), one background task, started after the
  runtime (it shares the runtime's run slots, at the lowest priority) and stopped before it.

`install` also teaches the offline model this package's purposes (`app.pipeline.offline`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from aiohttp import web

from app.i18n import FALLBACK_LANGUAGE
from app.journal.profile.service import ProfileService
from app.log import fields
from app.memory.state import CharacterState
from app.pipeline import offline
from app.pipeline.pixie import offline as pixie_offline
from app.pipeline.characters import CharacterBook, CharacterDefinition
from app.pipeline.context import NodeContext, Services
from app.pipeline.graph import run_graph
from app.pipeline.impulses import ReminderClock
from app.pipeline.path1 import PATH1, event_payload
from app.pipeline.path2 import PATH2
from app.pipeline.pixie.worker import PixieWorker
from app.pipeline.prompts import PromptLibrary
from app.pipeline.state import Path1State, Path2State
from app.memory.reminders import ReminderStore
from app.pipeline.vocabulary import (
    CharacterRun, Path1Result, Path2Result, PipelineContext, Pipelines, TurnRejected, UserBlock,
)
from app.typedefs import (
    CHARACTER_BOOK, CHARACTERS, DB, GATEWAY, PIPELINE_HOST, PIPELINES, PIXIE, REDIS, REMINDER_CLOCK, RUNTIME,
    SETTINGS,
)

log = logging.getLogger(__name__)

NO_CHARACTER = "no_active_character"


class PipelineHost:
    """Path 1, path 2 and the after-delivery step over the app's services."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self._services: Services | None = None

    @property
    def services(self) -> Services:
        # Built on first use: Redis and SQLite exist only once the app has started.
        if self._services is None:
            app = self.app
            self._services = Services(
                settings=app[SETTINGS], redis=app[REDIS], db=app[DB],
                characters=app[CHARACTER_BOOK], prompts=PromptLibrary(app[SETTINGS]),
                wake_clock=self._wake_clock, wake_pixie=self._wake_pixie,
                memories_used=self._memories_used)
        return self._services

    def _wake_clock(self) -> None:
        clock = self.app.get(REMINDER_CLOCK)
        if clock is not None:
            clock.wake()

    def _wake_pixie(self) -> None:
        worker = self.app.get(PIXIE)
        if worker is not None:
            worker.wake()

    def _memories_used(self, memory_ids: list[str], at: float) -> None:
        worker = self.app.get(PIXIE)
        if worker is not None:
            worker.note_used(memory_ids, at)

    def background_context(self, user_id: str, character_id: str) -> NodeContext:
        """A context for model calls outside a turn (the Pixie worker): no stages to push,
        no turn to guard, the gateway in use now."""
        character = self.services.characters.get(character_id) or stand_in(character_id)

        async def no_stage(name: str) -> None:
            return None

        return NodeContext(services=self.services, character=character,
                           gateway=self.app[GATEWAY], stage=no_stage, guard=None,
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
        await run_graph("path1", PATH1, self.context(ctx, character, block.user_id), state)
        return Path1Result(event_payload=event_payload(state))

    async def path2(self, ctx: PipelineContext, run: CharacterRun) -> Path2Result:
        character = self.services.characters.get(run.character_id)
        if character is None:
            log.warning("no active character for the event; the turn ends with a notice",
                        extra=fields(character_id=run.character_id, turn_id=run.turn_id))
            raise TurnRejected(NO_CHARACTER, f"character {run.character_id!r} is not active")
        state = Path2State(turn_id=run.turn_id, user_id=run.user_id,
                           character_id=run.character_id, message_ids=list(run.message_ids),
                           origin=run.origin, source=run.event.source,
                           trigger_count=run.event.trigger_count, payload=dict(run.event.payload),
                           pending=run.pending_agent)
        node_ctx = self.context(ctx, character, run.user_id)
        node_ctx.interaction_hint = await ProfileService(
            self.services.db, self.services.settings).interaction_hint(run.user_id,
                                                                       character.language)
        await run_graph("path2", PATH2, node_ctx, state)
        return Path2Result(text=state.answer, origin=run.origin, emotion=state.state.emotion,
                           arousal=state.state.arousal, follow_up=state.follow_up)

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


def install(app: web.Application) -> None:
    """Characters, catalog and pipelines: the one place `create_app` chooses them."""
    offline.register_handlers()
    pixie_offline.register_handlers()
    book = CharacterBook(app[SETTINGS])
    app[CHARACTER_BOOK] = book
    app[CHARACTERS] = book.catalog()
    host = PipelineHost(app)
    app[PIPELINE_HOST] = host
    app[PIPELINES] = host.pipelines()


async def reminder_clock_ctx(app: web.Application) -> AsyncIterator[None]:
    clock = ReminderClock(ReminderStore(app[REDIS]), app[SETTINGS], app[CHARACTER_BOOK],
                          app[RUNTIME].submit_impulse,
                          long_term=app[PIPELINE_HOST].services.long_term)
    app[REMINDER_CLOCK] = clock
    await clock.start()
    try:
        yield
    finally:
        await clock.stop()


async def pixie_ctx(app: web.Application) -> AsyncIterator[None]:
    host = app[PIPELINE_HOST]
    runtime = app[RUNTIME]
    worker = PixieWorker(redis=app[REDIS], settings=app[SETTINGS], slots=runtime.slots,
                         long_term=host.services.long_term,
                         context_for=host.background_context, instance_id=runtime.instance_id)
    app[PIXIE] = worker
    await worker.start()
    try:
        yield
    finally:
        await worker.stop()
