"""What both agents do when they ask the user back (a list name, a time) and when the answer
resumes the command: the pending context they store (`AgentContext`), reading it back from
the parked event, its text for the prompt, and the original command read back from it."""

from __future__ import annotations

import logging
from typing import Any, TypeVar

import msgspec

from app.core.lenient import readable_fields
from app.core.log import fields
from app.pipeline.state import AgentContext, AgentResult, Path2State

log = logging.getLogger(__name__)

Command = TypeVar("Command", bound=msgspec.Struct)


def follow_up(
    agent: str,
    state: Path2State,
    task: str,
    command: msgspec.Struct,
    pending: AgentContext | None,
    question: str,
    **extra: Any,
) -> AgentResult:
    """The agent asks `question`; the context keeps the command and the turn it was asked
    for (the first turn of a chain of questions), for the answer to resume."""
    request_turn = (pending.turn_id if pending is not None else "") or state.turn_id
    context = AgentContext(
        agent=agent,
        turn_id=request_turn,
        task=task,
        question=question,
        command=msgspec.to_builtins(command),
        **extra,
    )
    return AgentResult(
        agent=agent, task=task, outcome="follow_up", question=question, context=context
    )


def read_context(stored: dict[str, Any] | None) -> AgentContext | None:
    """The context of a parked question as the runtime hands it back; a field that cannot be
    read is left out (its default applies) with a warning, so the answer still resumes."""
    if stored is None:
        return None

    def dropped(name: str, value: Any) -> None:
        log.warning(
            "pending agent context field dropped",
            extra=fields(field=name, value=repr(value), agent=stored.get("agent")),
        )

    try:
        return msgspec.convert(stored, AgentContext)
    except msgspec.ValidationError:
        return msgspec.convert(readable_fields(stored, AgentContext, dropped=dropped), AgentContext)


def original_command(pending: AgentContext, kind: type[Command], agent: str) -> Command | None:
    """The command the question was asked for; None (logged) when it cannot be read."""
    try:
        return msgspec.convert(pending.command, kind)
    except msgspec.ValidationError:
        log.warning(
            "pending command unreadable; the answer stands alone", extra=fields(agent=agent)
        )
        return None


def pending_text(pending: AgentContext | None) -> str:
    """The question asked and its task, for the agent's prompt."""
    if pending is None:
        return ""
    return "\n".join(part for part in (pending.question, pending.task) if part)
