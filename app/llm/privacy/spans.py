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
    e-mail address beats the name inside it), on a tie the kind ranked first in `KINDS`."""
    # The same name is often found twice (registered, and after "Frau"): once is enough.
    ordered = sorted(set(spans), key=lambda s: (s.start - s.end, _RANK[s.kind], s.start))
    starts: list[int] = []  # the taken spans, kept in text order
    taken: list[Span] = []
    for span in ordered:
        i = bisect.bisect_left(starts, span.start)
        if (i < len(taken) and taken[i].start < span.end) or (i and taken[i - 1].end > span.start):
            continue
        starts.insert(i, span.start)
        taken.insert(i, span)
    return taken
