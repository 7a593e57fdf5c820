"""The typed states the nodes work on: one per path run, created at its start, dropped at
its end (seed 001 §2: "State zerstört"). What must outlive a run is written by the
dispatcher."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from app.core.emotion import Emotion
from app.memory.lists import ListEdit
from app.memory.long_term import Memory
from app.memory.reminders import ReminderChange, ReminderToAdd
from app.memory.short_term import MemoryEntry
from app.memory.stance import Stance
from app.memory.state import CharacterState
from app.memory.turns import Turn
from app.pipeline.schemas import (
    CharacterSalience,
    Perception,
    PlanStep,
    Route,
    Salience,
    Verdict,
)
from app.pipeline.vocabulary import EventPayload, FollowUp, ResponseOrigin

StimulusKind = Literal["user", "thought", "continue", "retry"]
Outcome = Literal["completed", "error", "follow_up", "refused", "nothing"]


class Path1State(msgspec.Struct, kw_only=True):
    turn_id: str
    user_id: str
    character_id: str
    message_ids: list[str]
    text: str  # the block: its messages joined by newlines
    said_at: float  # received_at of the block's last message
    turns: list[Turn] = msgspec.field(default_factory=list)
    summary: str | None = None
    memories: list[MemoryEntry] = msgspec.field(default_factory=list)
    history: str = ""  # rendered, with the block as the newest USER line
    perception: Perception = msgspec.field(default_factory=Perception)
    user: Emotion = msgspec.field(default_factory=Emotion)  # EI calc (user)
    salience: Salience = msgspec.field(default_factory=Salience)
    stored: Turn | None = None


class Stimulus(msgspec.Struct, kw_only=True):
    """What a character run reacts to (the seed's "Reiz"): the user's words, the character's
    own thought, its wish to say more, or a retry of an answer that missed the request."""

    kind: StimulusKind
    text: str = ""  # the user's words (user, retry) or the thought (thought)
    intent: str = ""  # continue: what the character wanted to do
    commitment: bool = False  # continue: it had promised to do something (router may act)
    reason: str = ""  # retry: what the last answer missed


class AgentContext(msgspec.Struct, kw_only=True):
    """What an agent's question keeps for the answer to resume from: the `pending_agent` of
    its `awaiting_user` event, which the runtime parks and hands back with the next user
    message (`app.pipeline.agents.follow_up` writes and reads it). The turn is the one the
    question was first asked for; `command` the agent's own command struct so far, as JSON
    (read back as that struct); `candidates` what the user can choose from (the notes agent:
    list names; the reminders agent: the ids of the reminders a delete or move may mean;
    unset otherwise, and not written); `remaining` the plan's steps after it."""

    agent: str = ""
    turn_id: str = ""
    task: str = ""
    question: str = ""
    command: dict[str, Any] = msgspec.field(default_factory=dict)
    candidates: list[str] | UnsetType = UNSET
    remaining: list[PlanStep] = msgspec.field(default_factory=list)


class AgentResult(msgspec.Struct, kw_only=True):
    agent: str
    task: str
    outcome: Outcome
    said: list[str] = msgspec.field(default_factory=list)  # facts for the responder
    question: str = ""  # outcome follow_up
    context: AgentContext | None = None  # outcome follow_up: to resume from
    # What the agent would change; the dispatcher applies it with the turn, after the
    # tribunal (an agent never writes: a rejected turn changes nothing).
    effects: list[ListEdit | ReminderToAdd | ReminderChange] = msgspec.field(default_factory=list)


class Path2State(msgspec.Struct, kw_only=True):
    turn_id: str
    user_id: str
    character_id: str
    message_ids: list[str]
    origin: ResponseOrigin  # the wire origin the answer is delivered with
    source: Literal["user", "character"]
    trigger_count: int
    payload: EventPayload
    pending: AgentContext | None = None
    stimulus: Stimulus = msgspec.field(default_factory=lambda: Stimulus(kind="user"))
    turns: list[Turn] = msgspec.field(default_factory=list)
    summary: str | None = None
    memories: list[MemoryEntry] = msgspec.field(default_factory=list)
    known: list[Memory] = msgspec.field(default_factory=list)  # long-term memory, ranked
    lore: list[str] = msgspec.field(default_factory=list)  # lorebook entries, as shown
    request_turn: Turn | None = None  # the user turn this run answers, if any
    previous_answer: str = ""  # the character's last answer before this run
    history: str = ""
    user: Emotion | None = None  # the user's perceived state (a user event)
    expected_language: str = ""
    thought_arousal: float | None = None
    state: CharacterState = msgspec.field(default_factory=CharacterState)
    route: Route = msgspec.field(default_factory=Route)
    results: list[AgentResult] = msgspec.field(default_factory=list)
    vector: str = ""
    answer: str = ""
    drafts: list[str] = msgspec.field(default_factory=list)
    verdict: Verdict = msgspec.field(default_factory=Verdict)
    retry: bool = False  # the thinker failed the answer twice
    findings: list[str] = msgspec.field(default_factory=list)
    salience: CharacterSalience = msgspec.field(default_factory=CharacterSalience)
    stored: Turn | None = None
    stance: Stance | None = None  # `haltung` as the dispatcher wrote it
    follow_up: FollowUp | None = None

    @property
    def question(self) -> AgentResult | None:
        """The agent question this run asks the user, if any (then: `awaiting_user`)."""
        return next((r for r in self.results if r.outcome == "follow_up"), None)
