"""The structured answers the pipelines ask the model for (design §6), one struct per purpose.

Every schema is shaped so that its minimal valid instance — false booleans, empty lists and
strings, zero numbers, `None` where allowed — is the **neutral outcome**: no action, no
retry, no follow-up, answer accepted, nothing remembered. A weak model that says little
leads to a plain reply, never to a spurious action or loop. `msgspec.json.schema` lists a
Literal's values sorted, and its first value is what a neutral instance takes, so a Literal
appears only where its neutral value is `"none"` and every other value sorts after it
(`tests/pipeline/test_schemas.py` holds every schema to this).

Labels (emotion, mode, …) are free strings: the prompts name the seeds' German vocabulary,
and an empty string means "not perceived". `arousal` is `None` when not perceived, never a
made-up middle value.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from app.core.emotion import PerceivedEmotion, UnitFloat

AgentName = Literal["lists", "reminders"]
AGENTS: tuple[AgentName, ...] = ("lists", "reminders")


class Perception(PerceivedEmotion, kw_only=True):
    """Path 1: how the user's block comes across (seed 000 §2.2: the nine EI dimensions,
    the core summary, intentions and topics). The same schema perceives nothing else."""


class Salience(msgspec.Struct, kw_only=True):
    """Path 1: how much the block matters and what of it is worth remembering for a while."""

    importance: UnitFloat = 0.0
    segments: list[str] = msgspec.field(default_factory=list)


class CharacterSalience(msgspec.Struct, kw_only=True):
    """Path 2: the same for the character's own answer, plus how the character itself
    feels after saying it (what the client shows with the answer)."""

    importance: UnitFloat = 0.0
    segments: list[str] = msgspec.field(default_factory=list)
    emotion: str = ""
    arousal: UnitFloat | None = None


class Route(msgspec.Struct, kw_only=True):
    """Path 2: does this need an action, and which agents? Does the user's message answer
    the agent's open question (resume)?"""

    needs_action: bool = False
    agents: list[AgentName] = msgspec.field(default_factory=list)
    answers_pending: bool = False


class PlanStep(msgspec.Struct, kw_only=True):
    agent: AgentName
    task: str


class Plan(msgspec.Struct, kw_only=True):
    """Path 2: the request split into agent tasks, in order (empty: nothing to do)."""

    steps: list[PlanStep] = msgspec.field(default_factory=list)


class ListCommand(msgspec.Struct, kw_only=True):
    """The notes agent's reading of one task. `list_name` as the user said it ("" when
    none); `create_list` only when the user asks for a new list explicitly."""

    list_name: str = ""
    add: list[str] = msgspec.field(default_factory=list)
    remove: list[str] = msgspec.field(default_factory=list)
    show: bool = False
    clear: bool = False
    create_list: bool = False


class ReminderCommand(msgspec.Struct, kw_only=True):
    """The reminders agent's reading of one task. `due_at`: ISO 8601 with offset ("" when
    the user named no time); `show`: list the pending reminders. `delete`/`move`: the task is
    about an existing reminder, which `text` names (a move's new time in `due_at`); neither
    set (the neutral answer) and a `text`: a new reminder."""

    text: str = ""
    due_at: str = ""
    show: bool = False
    delete: bool = False
    move: bool = False


class Verdict(msgspec.Struct, kw_only=True):
    """Path 2: does the answer meet what was asked? Does the character want to write again
    on its own (`follow_up`: e.g. ask how the user is; `commitment`: it promised to look
    into something)? `intent` names what it wants to do then."""

    misses_request: bool = False
    reason: str = ""
    follow_up: bool = False
    commitment: bool = False
    intent: str = ""


# Long-term memory (design §3a). The action's values are named so that the neutral one sorts
# first ("none" < "refresh" < "remember" < "supersede"): a new memory is `remember`, not
# `add`, which would sort before "none" and make a memory the minimal answer.
MemoryAction = Literal["none", "refresh", "remember", "supersede"]


class MemoryChange(msgspec.Struct, kw_only=True):
    """One thing to keep: `remember` a new memory, `refresh` the known memory `memory_id`
    (the same fact again), `supersede` it with `text` (a correction). `kind`: fact, person,
    preference, event, plan or feeling ("" = fact)."""

    action: MemoryAction = "none"
    memory_id: str = ""
    text: str = ""
    kind: str = ""


class Consolidation(msgspec.Struct, kw_only=True):
    """The Pixie worker: what of the user's words to keep in long-term memory (empty:
    nothing)."""

    memories: list[MemoryChange] = msgspec.field(default_factory=list)


SCHEMAS: tuple[type[msgspec.Struct], ...] = (
    Perception,
    Salience,
    CharacterSalience,
    Route,
    Plan,
    ListCommand,
    ReminderCommand,
    Verdict,
    Consolidation,
)
