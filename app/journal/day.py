"""A day's conversations and the local source ids of stage 1 (SPEC §8, seed 004 §16.1).

Every non-empty user line gets `u1, u2, …` in order; the assistant line right before a user
line (in the same conversation) comes along as context `a1, a2, …`. Other assistant lines
are not part of the day's sources at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class DayMessage:
    message_id: str
    role: str  # "user" | "assistant"
    text: str
    at: float | None


@dataclass(frozen=True, slots=True)
class Conversation:
    conversation_id: str
    source: str  # "chat" | "import"
    character_id: str | None
    messages: list[DayMessage] = field(default_factory=list)

    @property
    def user_messages(self) -> int:
        return sum(1 for m in self.messages if m.role == "user")

    def as_dict(self) -> dict[str, object]:
        return {"conversation_id": self.conversation_id, "character_id": self.character_id,
                "source": self.source,
                "messages": [{"message_id": m.message_id, "role": m.role, "text": m.text,
                              "at": m.at} for m in self.messages]}


@dataclass(frozen=True, slots=True)
class Source:
    """One line of stage 1's input: a user line (`u…`) or its assistant context (`a…`)."""

    source_id: str
    role: str
    text: str
    message_id: str
    conversation_id: str


def number_sources(conversations: Iterable[Conversation]) -> list[Source]:
    """The day's sources in order, with their local ids."""
    sources: list[Source] = []
    users = assistants = 0
    for conversation in conversations:
        before: DayMessage | None = None
        for message in conversation.messages:
            if message.role == "assistant":
                before = message
                continue
            if not message.text.strip():
                continue
            if before is not None:
                assistants += 1
                sources.append(Source(f"a{assistants}", "assistant", before.text,
                                      before.message_id, conversation.conversation_id))
                before = None
            users += 1
            sources.append(Source(f"u{users}", "user", message.text, message.message_id,
                                  conversation.conversation_id))
    return sources


def user_sources(sources: Sequence[Source]) -> list[Source]:
    return [s for s in sources if s.role == "user"]
