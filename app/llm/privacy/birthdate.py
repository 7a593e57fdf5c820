"""Birth dates: a date *with a year* near a birthday word (`geboren am 12.03.1985`,
`am 2.4.2019 geboren`,
`Geburtstag: 3. Mai 1990`, `born on 4 July 1976`, `DOB 1985-03-12`). A date without a year
("Geburtstag am 12. März") and a date with a year elsewhere (an appointment) stay."""

from __future__ import annotations

import re
from collections.abc import Iterator

from app.llm.privacy.rules import (
    BIRTHDAY_AFTER, BIRTHDAY_AFTER_REACH, BIRTHDAY_REACH, BIRTHDAY_WORDS,
)
from app.llm.privacy.scan import has_digits, lowered, positions
from app.llm.privacy.spans import Span

_MONTHS = (r"(?:Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|"
           r"November|Dezember|January|February|March|May|June|July|October|December|"
           r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Okt|Nov|Dec|Dez)\.?")
_YEAR = r"(?:19|20)\d{2}"
_DATE = re.compile(
    # A cheap first test: a date starts with a digit or with the first letters of a month.
    r"(?=\d|(?i:j[aäu]n|jul|feb|m[aä]r|apr|ma[iy]|aug|sep|o[ck]t|nov|de[cz]))"
    rf"\b(?:\d{{1,2}}\.[ ]?\d{{1,2}}\.[ ]?(?:{_YEAR}|\d{{2}})"      # 12.03.1985, 12.3.85
    rf"|\d{{1,2}}/\d{{1,2}}/{_YEAR}"                                # 03/12/1985
    rf"|{_YEAR}-\d{{2}}-\d{{2}}"                                    # 1985-03-12
    rf"|\d{{1,2}}(?:\.|st|nd|rd|th)?[ ]+(?:of[ ]+)?{_MONTHS}[ ]+{_YEAR}"  # 3. Mai 1990
    rf"|{_MONTHS}[ ]+\d{{1,2}}(?:st|nd|rd|th)?,?[ ]+{_YEAR})(?![\w])",    # March 3, 1990
    re.IGNORECASE)
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
    windows = [(at + len(word), at + len(word) + BIRTHDAY_REACH + _LONGEST_DATE)
               for word in BIRTHDAY_WORDS for at in positions(low, word)]
    windows += [(at - BIRTHDAY_AFTER_REACH - _LONGEST_DATE, at)
                for word in BIRTHDAY_AFTER for at in positions(low, word)]
    seen: set[int] = set()
    for start, end in sorted(windows):
        if not has_digits(text, start, end):  # every date has a year
            continue
        for match in _DATE.finditer(text, max(0, start), end):
            if match.start() in seen or not _near_birthday(text, match):
                continue
            seen.add(match.start())
            yield Span(match.start(), match.end(), "BIRTHDATE", match.group(0))


def _near_birthday(text: str, match: re.Match[str]) -> bool:
    before = text[max(0, match.start() - BIRTHDAY_REACH):match.start()]
    after = text[match.end():match.end() + BIRTHDAY_AFTER_REACH]
    return bool(_CONTEXT.search(before) or _CONTEXT_AFTER.search(after))
