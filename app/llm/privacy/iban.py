"""IBANs, checksum-valid by `schwifty` (written with or without the groups of four)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from schwifty import IBAN
from schwifty.exceptions import SchwiftyException

from app.llm.privacy.scan import digit_runs
from app.llm.privacy.spans import Span

_CANDIDATE = re.compile(r"(?=[A-Za-z])\b[A-Za-z]{2}\d{2}(?:[ \u00a0]?[A-Za-z0-9]){11,30}\b")
_GROUP_END = re.compile(r"[ \u00a0][A-Za-z0-9]+$")


def find(text: str) -> Iterator[Span]:
    # An IBAN's check digits start a digit run after its two letters: the pattern is only
    # tried two characters before each run (what `finditer` would find, without scanning
    # every character).
    done = 0
    for digits, _ in digit_runs(text):
        if digits - 2 < done or not text[digits - 2 : digits].isalpha():
            continue
        match = _CANDIDATE.match(text, digits - 2)
        if match is None:
            continue
        done = match.end()
        candidate = match.group(0)
        # A candidate may have swallowed the next word ("… 0130 00 ABC"): drop groups from
        # the right until the checksum holds.
        while candidate:
            if _valid(candidate):
                yield Span(match.start(), match.start() + len(candidate), "IBAN", candidate)
                break
            shorter = _GROUP_END.sub("", candidate)
            if shorter == candidate:
                break
            candidate = shorter


@functools.lru_cache(maxsize=1024)  # a user's IBAN recurs in every prompt of a conversation
def _valid(candidate: str) -> bool:
    try:
        IBAN(candidate.upper())  # written in lower case, it is the same account
    except (SchwiftyException, ValueError):
        return False
    return True
