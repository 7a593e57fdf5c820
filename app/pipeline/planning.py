"""Path 2's action part: the router and the planner ⇄ agents (seed 001 §2, design §6).

- `router` runs for the user's words and for a commitment the character made; an own
  thought, a wish to say more and a retry ask no agent (a retry must not repeat an action).
  It sees what the agents keep (the lists with their items, the open reminders), so that
  "Streich die Eier" or "Verschieb den Zahnarzt" is known for a command on something there.
  The long-term memory search runs beside its model call.
- `planner` runs when the router asked for an action or the user answers an agent's open
  question; agents are called star-shaped, each returning to the planner, at most
  `planner_max_steps` steps. An agent's question stops the plan; the rest of it waits in the
  question's context. An agent that breaks down is its step's error, not the turn's end.
"""

from __future__ import annotations

import asyncio
import logging

from app.core.clock import zone_named
from app.core.i18n import texts
from app.core.log import fields
from app.llm.errors import ModelError
from app.memory.long_term import Memory
from app.pipeline.agents import AGENTS
from app.pipeline.agents.lists import lists_text
from app.pipeline.agents.reminders import reminders_text
from app.pipeline.context import NodeContext
from app.pipeline.prompts import frame
from app.pipeline.recall import recall, recall_text
from app.pipeline.schemas import Plan, PlanStep, Route
from app.pipeline.state import AgentContext, AgentResult, Path2State

log = logging.getLogger(__name__)


def wants_router(state: Path2State) -> bool:
    return state.stimulus.kind == "user" or state.stimulus.commitment


async def route(ctx: NodeContext, state: Path2State) -> None:
    """The router's call, with the long-term memory search beside it (the search runs on a
    database thread while the model answers: it adds nothing to the turn's time)."""
    b = ctx.blocks
    kept_lists, kept_reminders = await kept_text(ctx, state)
    routed: Route | BaseException
    known: list[Memory] | BaseException
    routed, known = await asyncio.gather(
        ctx.ask_struct(
            "router",
            frame(
                [
                    (b.summary, state.summary),
                    (b.lists, kept_lists),
                    (b.reminders, kept_reminders),
                    (b.pending, state.pending.question if state.pending is not None else ""),
                    (b.intent, state.stimulus.intent if state.stimulus.commitment else ""),
                    (b.history, state.history),
                ]
            ),
        ),
        recall(ctx, state.user_id, state.character_id, recall_text(state)),
        return_exceptions=True,
    )  # both finish; then the first failure counts
    if isinstance(routed, BaseException):
        raise routed
    if isinstance(known, BaseException):
        raise known
    state.route, state.known = routed, known


async def kept_text(ctx: NodeContext, state: Path2State) -> tuple[str, str]:
    """The pair's lists and open reminders as the agents' prompts show them."""
    existing, waiting = await asyncio.gather(
        ctx.services.lists.of(state.user_id, state.character_id).all(),
        ctx.services.reminders.pending(state.user_id, state.character_id),
    )
    zone = zone_named(ctx.settings.timezone)
    return (lists_text(existing, ctx.language), reminders_text(waiting, zone, ctx.language))


def resuming(state: Path2State) -> bool:
    return state.pending is not None and state.route.answers_pending


def wants_planner(state: Path2State) -> bool:
    return resuming(state) or (state.route.needs_action and bool(state.route.agents))


async def plan(ctx: NodeContext, state: Path2State) -> None:
    """The planner: star-shaped agent calls, bounded by `planner_max_steps`."""
    steps: list[PlanStep] = []
    if resuming(state):
        assert state.pending is not None
        agent = state.pending.agent
        steps = list(state.pending.remaining)
        if agent in AGENTS:
            result = await _run_step(
                ctx, state, PlanStep(agent=agent, task=state.stimulus.text), state.pending
            )
            if result.context is not None:  # asked again: the rest keeps waiting
                result.context.remaining = steps
                return
    if state.route.needs_action and state.route.agents and not steps:
        steps = await _plan_steps(ctx, state)
    limit = ctx.settings.planner_max_steps
    if len(steps) > limit:
        log.warning(
            "planner_max_steps dropped agent steps",
            extra=fields(
                limit="planner_max_steps",
                max_steps=limit,
                planned=len(steps),
                dropped=[s.agent for s in steps[limit:]],
            ),
        )
        steps = steps[:limit]
    for index, step in enumerate(steps):
        result = await _run_step(ctx, state, step, None)
        if result.context is not None:  # a question: the rest waits for its answer
            result.context.remaining = steps[index + 1 :]
            break


async def _plan_steps(ctx: NodeContext, state: Path2State) -> list[PlanStep]:
    request = state.stimulus.intent if state.stimulus.commitment else state.stimulus.text
    agents = [a for a in dict.fromkeys(state.route.agents) if a in AGENTS]
    if len(agents) == 1:
        # One agent: the whole request is its task; no planning call needed.
        return [PlanStep(agent=agents[0], task=request)]
    b = ctx.blocks
    planned: Plan = await ctx.ask_struct(
        "planner", frame([(b.history, state.history), (b.request, request)])
    )
    steps = [s for s in planned.steps if s.agent in AGENTS and s.task.strip()]
    if not steps:
        log.warning(
            "router asked for an action, the planner planned none", extra=fields(agents=agents)
        )
    return steps


async def _run_step(
    ctx: NodeContext, state: Path2State, step: PlanStep, pending: AgentContext | None
) -> AgentResult:
    await ctx.stage(step.agent)
    try:
        result = await AGENTS[step.agent](ctx, state, step.task, pending)
    except ModelError:
        raise
    except Exception:
        log.exception("agent failed", extra=fields(agent=step.agent))
        result = AgentResult(
            agent=step.agent,
            task=step.task,
            outcome="error",
            said=[texts("agents", ctx.language)["failed"]],
        )
    state.results.append(result)
    log.info("agent step", extra=fields(agent=step.agent, outcome=result.outcome))
    return result
