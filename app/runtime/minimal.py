"""Minimal real pipelines: the whole loop end to end with exactly one model call per turn.

The product runs `app.pipeline`'s pipelines; these serve the runtime's own tests and
benchmarks, which look at the runtime alone (one scripted answer per turn, and an
orchestration overhead that is the runtime's, not the pipeline's).

- path 1 stores the block's complete user turn (one turn, all message ids, texts joined by
  newlines) in the session memory;
- path 2 renders the session history with the one renderer, makes one `responder` call
  through the model gateway and stores the complete assistant turn, carrying the message ids
  it answers and its occasion (`herkunft`);
- after delivery: the session summary check (outside the run lock, design §3).

They follow the interface of `app.pipeline.vocabulary` and are installed by setting
`app[PIPELINES] = minimal_pipelines()`.
"""

from __future__ import annotations

import time

from app.llm import ModelError
from app.llm.types import Message
from app.memory.commit import commit
from app.memory.render import render_history
from app.memory.state import load_state
from app.memory.turns import OCCASION_OF_ORIGIN, ROLE_ASSISTANT, ROLE_USER, Turn
from app.pipeline.vocabulary import (
    CharacterRun,
    ImpulsePayload,
    Path1Result,
    Path2Result,
    PipelineContext,
    Pipelines,
    UserBlock,
    UserPayload,
)

RESPONDER_TEMPERATURE = 0.7
CHARACTER_NAME = "Nova"


async def store_user_turn(ctx: PipelineContext, block: UserBlock) -> Path1Result:
    await ctx.stage("path1")
    turn = Turn(
        turn_id=block.turn_id,
        role=ROLE_USER,
        content=block.text,
        time=block.received_at[-1],
        message_ids=list(block.message_ids),
    )
    await commit(
        ctx.redis,
        ctx.guard,
        [ctx.memory.store_write(block.user_id, block.character_id, turn)],
    )
    return Path1Result()


def responder_messages(history: str, summary: str | None, run: CharacterRun) -> list[Message]:
    system = (
        f"You are {CHARACTER_NAME}, a warm companion in a private chat. Answer in the "
        "language of the conversation, briefly and naturally."
    )
    if summary:
        system += f"\n\nEarlier in this conversation (summary):\n{summary}"
    if history:
        system += f"\n\nThe conversation so far:\n{history}"
    payload = run.event.payload
    if isinstance(payload, ImpulsePayload):
        stimulus = f"[EIGENER GEDANKE] {payload.thought}"
    elif isinstance(payload, UserPayload):
        stimulus = payload.user_prompt
    else:
        stimulus = "[FORTSETZUNG] Continue your previous answer with one more thought."
    return [{"role": "system", "content": system}, {"role": "user", "content": stimulus}]


async def respond_once(ctx: PipelineContext, run: CharacterRun) -> Path2Result:
    await ctx.stage("responder")
    memory = ctx.memory
    turns, summary = await memory.retrieve(run.user_id, run.character_id)
    history = render_history(turns, ctx.settings, character_name=CHARACTER_NAME)
    completion = await ctx.gateway.complete(
        "responder",
        responder_messages(history, summary, run),
        max_tokens=ctx.settings.responder_max_tokens,
        temperature=RESPONDER_TEMPERATURE,
        user_id=run.user_id,
    )
    text = completion.text.strip()
    if not text:
        raise ModelError("model_bad_output", "the responder answered nothing")
    state = await load_state(ctx.redis, run.user_id, run.character_id)
    turn = Turn(
        turn_id=run.turn_id,
        role=ROLE_ASSISTANT,
        content=text,
        time=time.time(),
        occasion=OCCASION_OF_ORIGIN[run.origin],
        message_ids=list(run.message_ids),
        emotion=state.emotion,
        arousal=state.arousal,
    )
    await commit(ctx.redis, ctx.guard, [memory.store_write(run.user_id, run.character_id, turn)])
    return Path2Result(text=text, origin=run.origin, emotion=state.emotion, arousal=state.arousal)


async def summarize_after_delivery(
    ctx: PipelineContext, run: CharacterRun, result: Path2Result
) -> None:
    await ctx.memory.summarize_if_needed(
        run.user_id, run.character_id, ctx.gateway, character_name=CHARACTER_NAME
    )


def minimal_pipelines() -> Pipelines:
    return Pipelines(
        path1=store_user_turn, path2=respond_once, after_delivery=summarize_after_delivery
    )
