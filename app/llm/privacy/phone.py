"""Phone numbers as people write them, validated by `phonenumbers`.

A cheap pattern finds candidates — a `+`, `00`, `0` or `(0` start and digit groups with the
separators people use (`0170/1234567`, `(0151) 2345-678`, `+49 30 1234567`,
`0221 / 47 11 08 15`); `phonenumbers` decides whether a candidate is a real number (German
region by default, any region with a country code). Dates, times, order and parcel numbers
fail that test and stay; a date shape (`01.03.2024`) is never a number, nor digits that end
a code of letters and digits or follow a reference label (`rules.NUMBER_LABELS`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import phonenumbers

from app.llm.privacy.rules import NUMBER_LABELS, NUMBER_LABELS_REACH
from app.llm.privacy.scan import digit_runs, lowered
from app.llm.privacy.spans import Span

REGION = "DE"
_CANDIDATE = re.compile(
    r"(?=[+(\d])(?<![\w+/.])(?:\+|00)?\(?0?\d[\d()]*"  # a start: +49, 0049, (0151), 0170
    r"(?:[ \u00a0]?[-/.][ \u00a0]?\d[\d()]*|[ \u00a0]\(?\d[\d()]*){0,7}"  # groups: / - . space
    r"(?![\w/])"
)
_DIGITS = re.compile(r"\d")
_NANP = re.compile(r"\(\d{3}\)[ \u00a0]?\d{3}[-.]\d{4}")
_DATE = re.compile(r"\d{1,2}([./-])\d{1,2}\1(?:\d{2}|\d{4})|\d{4}-\d{2}-\d{2}")


def find(text: str) -> Iterator[Span]:
    # A number starts at a digit run or at the "+", "(" or "+(" right before one: the
    # pattern is only tried there (what `finditer` would find, without scanning every
    # character); a candidate is handed to `phonenumbers` only after the cheap tests.
    done = 0
    for at in _starts(text):
        if at < done:
            continue
        match = _CANDIDATE.match(text, at)
        if match is None:
            continue
        done = match.end()
        candidate = match.group(0)
        region = REGION
        if _NANP.fullmatch(candidate):  # "(206) 555-0187": written the North American way
            region = "US"
        elif not candidate.lstrip("(").startswith(("+", "0")):  # "+49", "0049", "0170"
            continue
        digits = len(_DIGITS.findall(candidate))
        if digits < 6 or digits > 16:
            continue
        if (
            not _DATE.fullmatch(candidate)
            and _valid(candidate, region)
            and not _reference(text, match.start())
        ):
            yield Span(match.start(), match.end(), "PHONE", candidate)


def _reference(text: str, start: int) -> bool:
    """Is the number at `start` a reference, not a phone: the tail of a code of letters and
    digits ("1Z 999 AA1 01 2345 6784", a parcel number) or after a reference label
    ("Sendungsnummer", "tracking number", `rules.NUMBER_LABELS`)?"""
    before = text[max(0, start - NUMBER_LABELS_REACH) : start]
    token = before.rstrip().rsplit(None, 1)[-1] if before.strip() else ""
    if any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
        return True
    low = lowered(text)[max(0, start - NUMBER_LABELS_REACH) : start]
    return any(label in low for label in NUMBER_LABELS)


def _starts(text: str) -> Iterator[int]:
    for start, _ in digit_runs(text):
        if text[max(0, start - 2) : start] == "+(":
            yield start - 2
        if start and text[start - 1] in "+(":
            yield start - 1
        yield start


@functools.lru_cache(maxsize=4096)  # the same numbers recur in every prompt of a conversation
def _valid(candidate: str, region: str = REGION) -> bool:
    try:
        number = phonenumbers.parse(candidate, region)
    except phonenumbers.NumberParseException:
        return False
    # "Possible" (the right length for its region) and not only "valid" (an allocated
    # range): people write new mobile ranges and short extensions that the metadata lags.
    return phonenumbers.is_possible_number(number)
