"""What a detector finds: a `Span` of the text, and the one way overlapping finds are settled."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import NamedTuple

# The kinds, in the order a tie between two overlapping finds of equal length is settled.
KINDS = ("EMAIL", "URL", "IBAN", "TAXID", "PHONE", "ADDRESS", "BIRTHDATE", "PLATE", "PERSON")
_RANK = {kind: rank for rank, kind in enumerate(KINDS)}


class Span(NamedTuple):  # a tuple: made by the dozen in every call, it must be cheap
    start: int
    end: int
    kind: str
    value: str


def settle(spans: Iterable[Span]) -> list[Span]:
    """Non-overlapping spans in text order: of overlapping finds the longer one wins (an
    e-mail address beats the name inside it), on a tie the kind ranked first in `KINDS`.
    Overlapping people are one person first (`_joined_people`): a name read in context
    ("Abends Anna-Lena") must not leave the rest of a registered one ("Anna-Lena Öztürk")
    standing."""
    # The same name is often found twice (registered, and after "Frau"): once is enough.
    ordered = sorted(
        _joined_people(set(spans)), key=lambda s: (s.start - s.end, _RANK[s.kind], s.start)
    )
    starts: list[int] = []  # the taken spans, kept in text order
    taken: list[Span] = []
    for span in ordered:
        i = bisect.bisect_left(starts, span.start)
        if (i < len(taken) and taken[i].start < span.end) or (i and taken[i - 1].end > span.start):
            continue
        starts.insert(i, span.start)
        taken.insert(i, span)
    return taken


def _joined_people(spans: set[Span]) -> list[Span]:
    """The spans with every run of overlapping PERSON spans joined into one that covers them
    all (its value pieced together from theirs: each is the text at its place)."""
    people = sorted((s for s in spans if s.kind == "PERSON"), key=lambda s: (s.start, -s.end))
    joined: list[Span] = []
    for span in people:
        last = joined[-1] if joined else None
        if last is not None and span.start < last.end:
            if span.end > last.end:
                joined[-1] = Span(
                    last.start, span.end, "PERSON", last.value + span.value[last.end - span.start :]
                )
            continue
        joined.append(span)
    return [*(s for s in spans if s.kind != "PERSON"), *joined]
