"""The agents the planner can call, star-shaped: each returns to the planner with an
`AgentResult` (completed, error, follow_up, refused, nothing)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from app.pipeline.agents import lists, reminders
from app.pipeline.context import NodeContext
from app.pipeline.schemas import AgentName
from app.pipeline.state import AgentContext, AgentResult, Path2State

Agent = Callable[[NodeContext, Path2State, str, AgentContext | None], Awaitable[AgentResult]]

AGENTS: dict[AgentName, Agent] = {
    lists.AGENT: lists.run,
    reminders.AGENT: reminders.run,
}
