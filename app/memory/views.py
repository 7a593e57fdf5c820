"""Memory's read models, as msgspec structs the API encodes: a long-term memory
(`long_term.Memory.view`), a line of the chat history (`history.Line.view`) and a reminder
(`reminders.Reminder.view`; a list answers as it is stored, `lists.NamedList`). Field order
is the answer's key order.
"""

from __future__ import annotations

import msgspec


class MemoryView(msgspec.Struct):
    """A memory's read model (`GET /api/characters/{cid}/memories`): field order is the
    answer's key order."""

    memory_id: str
    text: str
    kind: str
    importance: float
    created_at: float
    last_used_at: float | None
    source_message_ids: list[str]
    superseded_by: str | None


class LineView(msgspec.Struct):
    """A history line's read model (`GET /api/characters/{cid}/history`, its search): field
    order is the answer's key order."""

    cursor: str
    source: str
    role: str
    text: str
    at: float | None
    sort_at: float
    calendar_date: str
    turn_id: str | None
    message_ids: list[str]
    origin: str
    character_id: str | None
    conversation_id: str | None
    message_id: str | None


class ReminderView(msgspec.Struct, frozen=True):
    """A reminder's read model (`GET /api/characters/{cid}/reminders`, and what a change
    answers): without its owner, pair and claim."""

    id: str
    text: str
    due_at: float
    due_at_iso: str | None  # local ISO 8601; None where a stored time cannot be shown
    status: str
    created_at: float
    fired_at: float | None
    trigger_turn_id: str | None
    impulse_turn_id: str | None
