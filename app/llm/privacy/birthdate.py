"""Birth dates: a date *with a year* near a birthday word (`geboren am 12.03.1985`,
`am 2.4.2019 geboren`,
`Geburtstag: 3. Mai 1990`, `born on 4 July 1976`, `DOB 1985-03-12`). A date without a year
("Geburtstag am 12. März") and a date with a year elsewhere (an appointment) stay."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from app.llm.privacy.rules import (
    BIRTHDAY_AFTER,
    BIRTHDAY_AFTER_REACH,
    BIRTHDAY_REACH,
    BIRTHDAY_WORDS,
)
from app.llm.privacy.scan import digit_runs, lowered, positions
from app.llm.privacy.spans import Span

_MONTHS = (
    r"(?:Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|"
    r"November|Dezember|January|February|March|May|June|July|October|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Okt|Nov|Dec|Dez)\.?"
)
_YEAR = r"(?:19|20)\d{2}"
_DATE = re.compile(
    # A cheap first test: a date starts with a digit or with the first letters of a month.
    r"(?=\d|(?i:j[aäu]n|jul|feb|m[aä]r|apr|ma[iy]|aug|sep|o[ck]t|nov|de[cz]))"
    rf"\b(?:\d{{1,2}}\.[ ]?\d{{1,2}}\.[ ]?(?:{_YEAR}|\d{{2}})"  # 12.03.1985, 12.3.85
    rf"|\d{{1,2}}/\d{{1,2}}/{_YEAR}"  # 03/12/1985
    rf"|{_YEAR}-\d{{2}}-\d{{2}}"  # 1985-03-12
    rf"|\d{{1,2}}(?:\.|st|nd|rd|th)?[ ]+(?:of[ ]+)?{_MONTHS}[ ]+{_YEAR}"  # 3. Mai 1990
    rf"|{_MONTHS}[ ]+\d{{1,2}}(?:st|nd|rd|th)?,?[ ]+{_YEAR})(?![\w])",  # March 3, 1990
    re.IGNORECASE,
)
_CONTEXT = re.compile("|".join(re.escape(word) for word in BIRTHDAY_WORDS), re.IGNORECASE)
_CONTEXT_AFTER = re.compile("|".join(re.escape(word) for word in BIRTHDAY_AFTER), re.IGNORECASE)
# Cheap first test (str.find on the lower-cased text): words without which no birth date is.
_STEMS = ("geb", "born", "birth", "bday", "b-day", "dob", "jahrgang", "welt")


_LONGEST_DATE = 25  # "30. September 1985" and the like


def find(text: str) -> Iterator[Span]:
    # Only near a birthday word: the date pattern runs in those windows alone.
    low = lowered(text)
    if not any(stem in low for stem in _STEMS):
        return
    windows = [
        (at + len(word), at + len(word) + BIRTHDAY_REACH + _LONGEST_DATE)
        for word in BIRTHDAY_WORDS
        for at in positions(low, word)
    ]
    windows += [
        (at - BIRTHDAY_AFTER_REACH - _LONGEST_DATE, at)
        for word in BIRTHDAY_AFTER
        for at in positions(low, word)
    ]
    for start, end in _merged(windows):
        for match in _dates(text, max(0, start), end):
            if _near_birthday(text, match):
                yield Span(match.start(), match.end(), "BIRTHDATE", match.group(0))


def _merged(windows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping windows as one ("geboren" is a word before and after a date): each date
    is read once."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _dates(text: str, start: int, end: int) -> Iterator[re.Match[str]]:
    """The dates in `text[start:end]` (what `_DATE.finditer` finds there): a date starts
    at a digit run or at the month name right before one ("March 3, 1990"), so the pattern
    is only tried there."""
    runs = digit_runs(text)
    done = start
    for i in range(bisect.bisect_left(runs, (start, -1)), len(runs)):
        run_start = runs[i][0]
        if run_start >= end:
            break
        for at in (_word_before(text, run_start), run_start):
            if at < done:
                continue
            match = _DATE.match(text, at, end)
            if match is not None:
                done = match.end()
                yield match


def _word_before(text: str, position: int) -> int:
    """Where the word before `position` starts (past spaces and one dot): `position` if none."""
    i = position
    while i > 0 and text[i - 1] == " ":
        i -= 1
    if i > 0 and text[i - 1] == ".":
        i -= 1
    word_end = i
    while i > 0 and text[i - 1].isalpha():
        i -= 1
    return i if i < word_end else position


def _near_birthday(text: str, match: re.Match[str]) -> bool:
    before = text[max(0, match.start() - BIRTHDAY_REACH) : match.start()]
    after = text[match.end() : match.end() + BIRTHDAY_AFTER_REACH]
    return bool(_CONTEXT.search(before) or _CONTEXT_AFTER.search(after))
