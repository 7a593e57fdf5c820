"""Plain-text helpers of the offline provider: where the user's words are, sentences, words,
language. Deterministic, no model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import simplemma

from app.llm.types import BLOCK_PREFIX, Message

# A speaker line of the session history renderer (design §3): `[3] USER (neutral, ERLEDIGT): …`,
# `[4] NOVA (von sich aus): …`. A contribution runs until the next speaker line.
SPEAKER_LINE = re.compile(r"^\[(\d+)\]\s+([^\n:(]+?)(?:\s*\(([^)\n]*)\))?:[ \t]?(.*)$", re.M)
USER_LABEL = "USER"

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
_WORD = re.compile(r"[A-Za-zÄÖÜäöüß][A-Za-zÄÖÜäöüß'-]*")

GERMAN_MARKERS = frozenset(
    [
        "ich",
        "du",
        "er",
        "sie",
        "es",
        "wir",
        "ihr",
        "mich",
        "mir",
        "dich",
        "dir",
        "uns",
        "euch",
        "mein",
        "meine",
        "dein",
        "deine",
        "und",
        "oder",
        "aber",
        "nicht",
        "kein",
        "keine",
        "ist",
        "bin",
        "bist",
        "sind",
        "war",
        "waren",
        "hat",
        "habe",
        "hast",
        "haben",
        "wird",
        "werden",
        "wurde",
        "auch",
        "noch",
        "schon",
        "sehr",
        "heute",
        "morgen",
        "gestern",
        "jetzt",
        "immer",
        "wieder",
        "mit",
        "von",
        "zu",
        "zum",
        "zur",
        "für",
        "über",
        "unter",
        "bei",
        "nach",
        "vor",
        "aus",
        "dass",
        "weil",
        "wenn",
        "wie",
        "was",
        "wer",
        "wo",
        "warum",
        "wann",
        "welche",
        "welcher",
        "das",
        "der",
        "die",
        "den",
        "dem",
        "des",
        "ein",
        "eine",
        "einen",
        "einem",
        "einer",
        "mal",
        "doch",
        "ja",
        "nein",
        "gut",
        "danke",
        "bitte",
        "hallo",
        "heute",
        "gerade",
    ]
)
ENGLISH_MARKERS = frozenset(
    [
        "i",
        "you",
        "he",
        "she",
        "it",
        "we",
        "they",
        "me",
        "my",
        "your",
        "our",
        "their",
        "and",
        "or",
        "but",
        "not",
        "no",
        "is",
        "am",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "will",
        "would",
        "be",
        "been",
        "very",
        "today",
        "tomorrow",
        "yesterday",
        "now",
        "always",
        "again",
        "with",
        "from",
        "to",
        "for",
        "about",
        "under",
        "at",
        "after",
        "before",
        "out",
        "that",
        "because",
        "if",
        "how",
        "what",
        "who",
        "where",
        "why",
        "when",
        "which",
        "the",
        "a",
        "an",
        "this",
        "these",
        "those",
        "just",
        "yes",
        "thanks",
        "please",
        "hello",
        "hi",
        "really",
        "so",
        "do",
        "does",
        "did",
        "can",
    ]
)


@dataclass(frozen=True, slots=True)
class Contribution:
    """One speaker's contribution in a rendered history block."""

    label: str
    meta: str
    text: str

    @property
    def is_user(self) -> bool:
        return self.label.strip().upper().startswith(USER_LABEL)


def contributions(text: str) -> list[Contribution]:
    """The speaker contributions of a rendered history block (empty if it has none)."""
    matches = list(SPEAKER_LINE.finditer(text))
    found = []
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        title = text.find("\n" + BLOCK_PREFIX, match.end(), end)
        if title != -1:  # the history block ends where the frame's next block begins
            end = title
        body = (match.group(4) + text[match.end() : end]).strip()
        found.append(Contribution(match.group(2).strip(), (match.group(3) or "").strip(), body))
    return found


def user_text(messages: Sequence[Message]) -> str:
    """The user's latest words: the last `user` message; if it carries a rendered history,
    the last USER contribution in it."""
    for message in reversed(messages):
        if message["role"] != "user":
            continue
        content = message["content"]
        users = [c for c in contributions(content) if c.is_user]
        if users:
            return users[-1].text
        return content.strip()
    return ""


def all_text(messages: Sequence[Message], *, roles: tuple[str, ...] = ("user",)) -> str:
    return "\n".join(m["content"] for m in messages if m["role"] in roles)


def sentences(text: str) -> list[str]:
    """Whole sentences, in order; a line break also ends one."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def as_written(word: str, text: str) -> str:
    """`word` (in any case) spelled as `text` writes it: as it stands inside a sentence ("meine
    Schwester": "Schwester"); where it only opens one, lower-cased unless the dictionary
    (simplemma, in the text's language) writes it with a capital — a German noun or a name
    ("Schwester", "Paris") keeps it, an ordinary word ("Gardening") does not. `word` as it is
    when the text does not hold it."""
    wanted = word.casefold()
    opening = ""
    for sentence in sentences(text):
        for index, found in enumerate(words(sentence)):
            if found.casefold() != wanted:
                continue
            if index:
                return found
            opening = opening or found
    if not opening:
        return word
    lemma = simplemma.lemmatize(opening, lang=language(text))
    return opening if lemma[:1].isupper() else opening.lower()


def language(text: str) -> str:
    """ "de" or "en" by counting function words; German umlauts tip a tie; default German
    (Nova's home language)."""
    lowered = [w.lower() for w in words(text)]
    german = sum(w in GERMAN_MARKERS for w in lowered) + sum(c in "äöüßÄÖÜ" for c in text)
    english = sum(w in ENGLISH_MARKERS for w in lowered)
    return "en" if english > german else "de"
