"""The character's pipelines as the runtime calls them (design §6): `PipelineHost` runs path 1,
path 2 and the after-delivery step over the app's services, and hands the runtime its
`Pipelines` (`app.pipeline.vocabulary` is the contract).

The wiring (`app.wiring.server`) builds the host once, when Redis, SQLite and the model gateway
are up, with the pipelines' `Services` (whose wake-ups reach the reminder clock and the Pixie
worker: a new reminder wakes the clock, a promotion trigger and the memories a prompt used go
to the worker) and, for the benchmark and tests, an observer of every completed path run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from app.characters.book import CharacterDefinition
from app.core.i18n import FALLBACK_LANGUAGE
from app.core.log import fields
from app.llm import Gateway
from app.memory.state import CharacterState
from app.pipeline.agents.follow_up import read_context
from app.pipeline.context import NodeContext, Services
from app.pipeline.graph import GraphRun, run_graph
from app.pipeline.path1 import PATH1, result_of
from app.pipeline.path2 import PATH2
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
from app.profiles.interaction import profile as interaction

log = logging.getLogger(__name__)


NO_CHARACTER = "no_active_character"

PathRunObserver = Callable[[GraphRun], None]


class PipelineHost:
    """Path 1, path 2 and the after-delivery step over the app's services.

    `on_path_run`, when given, is told what each completed path run took (bench/turn.py
    reads its figures there)."""

    def __init__(
        self, services: Services, gateway: Gateway, *, on_path_run: PathRunObserver | None = None
    ) -> None:
        self.services = services
        self.gateway = gateway  # the one a background context calls (a turn's comes with it)
        self.on_path_run = on_path_run
        self.interactions = services.interactions

    def background_context(self, user_id: str, character_id: str) -> NodeContext:
        """A context for model calls outside a turn (the Pixie worker): no stages to push,
        no turn to guard, the gateway in use now."""
        character = self.services.characters.get(user_id, character_id) or stand_in(character_id)

        async def no_stage(name: str) -> None:
            return None

        return NodeContext(
            services=self.services,
            character=character,
            gateway=self.gateway,
            stage=no_stage,
            guard=None,
            user_id=user_id,
        )

    def context(
        self,
        ctx: PipelineContext,
        character: CharacterDefinition,
        user_id: str,
        *,
        interaction_hint: str = "",
    ) -> NodeContext:
        return NodeContext(
            services=self.services,
            character=character,
            gateway=ctx.gateway,
            stage=ctx.stage,
            guard=ctx.guard,
            user_id=user_id,
            interaction_hint=interaction_hint,
        )

    async def path1(self, ctx: PipelineContext, block: UserBlock) -> Path1Result:
        # Without an active character the user's words are still perceived and kept
        # (seed 001 §6.7): only path 2 needs the character.
        character = self.services.characters.get(block.user_id, block.character_id) or stand_in(
            block.character_id
        )
        state = Path1State(
            turn_id=block.turn_id,
            user_id=block.user_id,
            character_id=block.character_id,
            message_ids=list(block.message_ids),
            text=block.text,
            said_at=block.received_at[-1],
        )
        self._ran(
            await run_graph(
                "path1",
                PATH1,
                self.context(ctx, character, block.user_id),
                state,
                turn_id=block.turn_id,
            )
        )
        return result_of(state)

    async def path2(self, ctx: PipelineContext, run: CharacterRun) -> Path2Result:
        character = self.services.characters.get(run.user_id, run.character_id)
        if character is None:
            log.warning(
                "no active character for the event; the turn ends with a notice",
                extra=fields(character_id=run.character_id, turn_id=run.turn_id),
            )
            raise TurnRejected(NO_CHARACTER, f"character {run.character_id!r} is not active")
        state = Path2State(
            turn_id=run.turn_id,
            user_id=run.user_id,
            character_id=run.character_id,
            message_ids=list(run.message_ids),
            origin=run.origin,
            source=run.event.source,
            trigger_count=run.event.trigger_count,
            payload=run.event.payload,
            pending=read_context(run.pending_agent),
        )
        hint = interaction.hint(await self.interactions.current(run.user_id), character.language)
        node_ctx = self.context(ctx, character, run.user_id, interaction_hint=hint)
        self._ran(await run_graph("path2", PATH2, node_ctx, state, turn_id=run.turn_id))
        return Path2Result(
            text=state.answer,
            origin=run.origin,
            emotion=state.state.emotion,
            arousal=state.state.arousal,
            follow_up=state.follow_up,
        )

    def _ran(self, run: GraphRun) -> None:
        if self.on_path_run is not None:
            self.on_path_run(run)

    async def after_delivery(
        self, ctx: PipelineContext, run: CharacterRun, result: Path2Result
    ) -> None:
        """The session summary check, outside the run lock (design §3)."""
        character = self.services.characters.get(run.user_id, run.character_id) or stand_in(
            run.character_id
        )
        await self.services.memory.summarize_if_needed(
            run.user_id,
            run.character_id,
            ctx.gateway,
            character_name=character.name,
            language=character.language,
        )

    def pipelines(self) -> Pipelines:
        return Pipelines(
            path1=self.path1,
            path2=self.path2,
            after_delivery=self.after_delivery,
            finish_writes=self.services.log_outbox.deliver_all,
        )


def stand_in(character_id: str) -> CharacterDefinition:
    """Name and language for a character without a definition (path 1 only)."""
    return CharacterDefinition(
        id=character_id,
        name=character_id.capitalize(),
        language=FALLBACK_LANGUAGE,
        persona="",
        description="",
        baseline=CharacterState(),
        source="stand-in",
    )
