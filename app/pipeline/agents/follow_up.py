"""What both agents do when they ask the user back (a list name, a time) and when the answer
resumes the command: the pending context they store, its text for the prompt, and the
original command read back from it."""

from __future__ import annotations

import logging
from typing import Any, TypeVar

import msgspec

from app.core.log import fields
from app.pipeline.state import AgentResult, Path2State

log = logging.getLogger(__name__)

Command = TypeVar("Command", bound=msgspec.Struct)


def follow_up(agent: str, state: Path2State, task: str, command: msgspec.Struct,
              pending: dict[str, Any] | None, question: str, **extra: Any) -> AgentResult:
    """The agent asks `question`; the context keeps the command and the turn it was asked
    for (the first turn of a chain of questions), for the answer to resume."""
    request_turn = (pending or {}).get("turn_id") or state.turn_id
    context = {"agent": agent, "turn_id": request_turn, "task": task, "question": question,
               "command": msgspec.to_builtins(command), **extra}
    return AgentResult(agent=agent, task=task, outcome="follow_up", question=question,
                       context=context)


def original_command(pending: dict[str, Any], kind: type[Command], agent: str) -> Command | None:
    """The command the question was asked for; None (logged) when it cannot be read."""
    try:
        return msgspec.convert(pending.get("command", {}), kind)
    except msgspec.ValidationError:
        log.warning("pending command unreadable; the answer stands alone",
                    extra=fields(agent=agent))
        return None


def pending_text(pending: dict[str, Any] | None) -> str:
    """The question asked and its task, for the agent's prompt."""
    if not pending:
        return ""
    return "\n".join(part for part in (str(pending.get("question", "")),
                                       str(pending.get("task", ""))) if part)
