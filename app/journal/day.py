"""A day's conversations and the local source ids of stage 1 (design §8, seed 004 §16.1).

Every non-empty user line gets `u1, u2, …` in order; the assistant line right before a user
line (in the same conversation) comes along as context `a1, a2, …`. Other assistant lines
are not part of the day's sources at all.

A user line may not be part of the day's story although it is the user's: a request the
character carried out (its turn's action mark: "Setz Milch auf die Einkaufsliste") is `done`,
a question to the character is `question` (`act_of`). Such a line is a source like any other
— stage 1 covers it, the draft's refs name it — but an entry lists it apart (done) or leaves
it out of the prose (question); `app.journal.artifact`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Act = Literal["", "done", "question"]
# What may close a question after its question mark: quotes, brackets, spaces, an emoji.
_AFTER_QUESTION = re.compile(r"\?[\s\"'»«“”„‘’)\]\u2600-\u27bf\U0001f300-\U0001faff]*\Z")


@dataclass(frozen=True, slots=True)
class DayMessage:
    message_id: str
    role: str  # "user" | "assistant"
    text: str
    at: float | None
    # A user line whose turn's action the character carried out (the action mark, done and
    # succeeded); only chat lines can have one.
    done: bool = False


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
        return {
            "conversation_id": self.conversation_id,
            "character_id": self.character_id,
            "source": self.source,
            "messages": [
                {
                    "message_id": m.message_id,
                    "role": m.role,
                    "text": m.text,
                    "at": m.at,
                    "done": m.done,
                }
                for m in self.messages
            ],
        }


@dataclass(frozen=True, slots=True)
class Source:
    """One line of stage 1's input: a user line (`u…`) or its assistant context (`a…`)."""

    source_id: str
    role: str
    text: str
    message_id: str
    conversation_id: str
    act: Act = ""


def act_of(message: DayMessage) -> Act:
    """`done` for a line the character carried out, `question` for a question to it (a user
    line that ends with a question mark), else '' (a line of the day's story)."""
    if message.done:
        return "done"
    return "question" if _AFTER_QUESTION.search(message.text.strip()) else ""


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
                sources.append(
                    Source(
                        f"a{assistants}",
                        "assistant",
                        before.text,
                        before.message_id,
                        conversation.conversation_id,
                    )
                )
                before = None
            users += 1
            sources.append(
                Source(
                    f"u{users}",
                    "user",
                    message.text,
                    message.message_id,
                    conversation.conversation_id,
                    act_of(message),
                )
            )
    return sources


def user_sources(sources: Sequence[Source]) -> list[Source]:
    return [s for s in sources if s.role == "user"]
