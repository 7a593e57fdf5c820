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
    words = set()
    for piece in _pieces(lowered(text)):
        words.update(piece.split())
    odd = [token for token in words if not token.isalpha()]
    words.difference_update(odd)
    for token in odd:
        token = token.strip(_PUNCTUATION)
        if token.isalpha():
            words.add(token)
        elif token:
            words.update(_WORD.findall(token))
    return frozenset(words)


_PIECE = 16_384  # characters split at once: a long text's split would hold the GIL ~16 ms


def _pieces(text: str) -> Iterator[str]:
    """`text` in pieces cut at spaces, so that a worker thread masking a 200 kB prompt lets
    the event loop run between them."""
    start = 0
    while len(text) - start > _PIECE:
        cut = text.find(" ", start + _PIECE)
        if cut == -1:
            break
        yield text[start:cut]
        start = cut
    yield text[start:]


def finditer(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` piece by piece: a pattern that rarely matches would scan a
    200 kB text in one call that holds the GIL for ~13 ms. For a pattern that matches one
    character (it may look behind: a piece's start sees the text before it)."""
    for start in range(0, len(text), _PIECE):
        yield from pattern.finditer(text, start, start + _PIECE)


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
