"""What several detectors read of the same text, computed once per text (cached: one mask
call asks for it many times): the lower case, the set of words, the digit runs.

The detectors of numbers (phone, IBAN, tax id, address, plate, birth date) all need a digit,
so they start from the digit runs found here in one pass instead of each scanning the whole
text with a pattern of its own; the name finders look up their anchor words in `present`
and skip every anchor the text does not hold.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_DIGITS = re.compile(r"\d+")
_PUNCTUATION = ".,;:!?\"'()[]«»„“”‚‘’…–—-*/"  # cut from a token's ends


@functools.lru_cache(maxsize=16)
def lowered(text: str) -> str:
    """`text` in lower case, position for position."""
    low = text.lower()
    if len(low) != len(text):  # a letter whose lower case is longer ("İ"): keep it as is
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return low


@functools.lru_cache(maxsize=16)
def present(text: str) -> frozenset[str]:
    """The lower-case words of `text` (runs of letters, joined by an apostrophe): the
    anchors not among them need no search at all."""
    # Most space-separated tokens are a word as they stand, or with punctuation around it;
    # only the distinct others (digits, "@", inner dashes) go through the pattern.
    words = set(lowered(text).split())
    odd = [token for token in words if not token.isalpha()]
    words.difference_update(odd)
    for token in odd:
        token = token.strip(_PUNCTUATION)
        if token.isalpha():
            words.add(token)
        elif token:
            words.update(_WORD.findall(token))
    return frozenset(words)


@functools.lru_cache(maxsize=16)
def digit_runs(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of every run of digits, in text order."""
    return tuple(match.span() for match in _DIGITS.finditer(text))


@functools.lru_cache(maxsize=16)
def _run_ends(text: str) -> tuple[int, ...]:
    return tuple(end for _, end in digit_runs(text))


def has_digits(text: str, start: int, end: int) -> bool:
    """Does a digit run overlap `text[start:end]`?"""
    runs = digit_runs(text)
    i = bisect.bisect_right(_run_ends(text), start)  # the first run ending after `start`
    return i < len(runs) and runs[i][0] < end


def positions(low: str, word: str) -> Iterator[int]:
    """Every place `word` stands in the lower-cased text (inside other words too)."""
    at = low.find(word)
    while at != -1:
        yield at
        at = low.find(word, at + 1)
