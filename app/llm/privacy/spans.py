"""What a detector finds: a `Span` of the text, and the one way overlapping finds are settled."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# The kinds, in the order a tie between two overlapping finds of equal length is settled.
KINDS = ("EMAIL", "URL", "IBAN", "TAXID", "PHONE", "ADDRESS", "BIRTHDATE", "PLATE", "PERSON")
_RANK = {kind: rank for rank, kind in enumerate(KINDS)}

# One token of a word: letters of any script, digits, the apostrophe of "O'Brien".
WORD = re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?")


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: str
    value: str


def settle(spans: Iterable[Span]) -> list[Span]:
    """Non-overlapping spans in text order: of overlapping finds the longer one wins (an
    e-mail address beats the name inside it), on a tie the kind ranked first in `KINDS`."""
    ordered = sorted(spans, key=lambda s: (-(s.end - s.start), _RANK[s.kind], s.start))
    taken: list[Span] = []
    for span in ordered:
        if all(span.end <= t.start or span.start >= t.end for t in taken):
            taken.append(span)
    return sorted(taken, key=lambda s: s.start)


_BEFORE = re.compile(r"([\w.'’-]+)[ \t\u00a0]*$")


def words_before(text: str, start: int, count: int = 2) -> list[str]:
    """Up to `count` words before `start`, nearest first, a trailing dot kept ("Dr.");
    a comma or the end of a sentence stops the walk."""
    words: list[str] = []
    window = text[max(0, start - 40):start]
    while len(words) < count:
        match = _BEFORE.search(window)
        if match is None:
            break
        words.append(match.group(1))
        window = window[:match.start()]
    return words


def word_after(text: str, end: int) -> str:
    """The word right after `end` (spaces skipped), or "" when punctuation comes first."""
    match = WORD.match(text, len(text) - len(text[end:].lstrip(" \t\u00a0")))
    return match.group(0) if match else ""


def sentence_start(text: str, start: int) -> bool:
    """Does a sentence (or the text, or a line) begin at `start`?"""
    pos = start
    while pos > 0 and text[pos - 1] in " \t\u00a0\"'„“(":
        pos -= 1
    return pos == 0 or text[pos - 1] in ".!?:\n;"
