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
from app.llm.privacy.spans import Span

_MONTHS = (r"(?:Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|"
           r"November|Dezember|January|February|March|May|June|July|October|December|"
           r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Okt|Nov|Dec|Dez)\.?")
_YEAR = r"(?:19|20)\d{2}"
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\.[ ]?\d{{1,2}}\.[ ]?(?:{_YEAR}|\d{{2}})"      # 12.03.1985, 12.3.85
    rf"|\d{{1,2}}/\d{{1,2}}/{_YEAR}"                                # 03/12/1985
    rf"|{_YEAR}-\d{{2}}-\d{{2}}"                                    # 1985-03-12
    rf"|\d{{1,2}}(?:\.|st|nd|rd|th)?[ ]+(?:of[ ]+)?{_MONTHS}[ ]+{_YEAR}"  # 3. Mai 1990
    rf"|{_MONTHS}[ ]+\d{{1,2}}(?:st|nd|rd|th)?,?[ ]+{_YEAR})(?![\w])",    # March 3, 1990
    re.IGNORECASE)
_CONTEXT = re.compile("|".join(re.escape(word) for word in BIRTHDAY_WORDS), re.IGNORECASE)
_CONTEXT_AFTER = re.compile("|".join(re.escape(word) for word in BIRTHDAY_AFTER), re.IGNORECASE)


def find(text: str) -> Iterator[Span]:
    for match in _DATE.finditer(text):
        before = text[max(0, match.start() - BIRTHDAY_REACH):match.start()]
        after = text[match.end():match.end() + BIRTHDAY_AFTER_REACH]
        if _CONTEXT.search(before) or _CONTEXT_AFTER.search(after):
            yield Span(match.start(), match.end(), "BIRTHDATE", match.group(0))
