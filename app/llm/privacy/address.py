"""Street addresses with a house number, plus postcode and city when attached.

German: `Hauptstraße 12a`, `Weserstr. 112`, `Karl-Marx-Allee 3-5`, `Am Markt 5`,
`In der Aue 7, 50667 Köln`. English: `221B Baker Street`, `12 Oak Lane, London NW1 6XE`.
A postcode or a city alone is no address and stays; so is a street without a number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from app.llm.privacy.scan import digit_runs
from app.llm.privacy.spans import Span

_UPPER = "A-ZÄÖÜ"
_LOWER = "a-zäöüß"
_STREET_SUFFIX = (
    r"(?:straße|strasse|str\.|weg|gasse|allee|platz|ring|damm|ufer|chaussee|"
    r"steig|pfad|markt|berg|graben|wall|hof|park|stieg|zeile|kamp|twiete)"
)
_STREET_WORD = (
    r"(?:Straße|Strasse|Str\.|Weg|Gasse|Allee|Platz|Ring|Damm|Ufer|Chaussee|"
    r"Steig|Pfad|Markt|Berg|Graben|Wall)"
)
_HOUSE_NUMBER = (
    r"(?!(?:19|20)\d\d\b)\d{1,4}(?:[ ]?[a-zA-Z](?![\w]))?"  # 12, 12a, not a year
    r"(?:[ ]?[-–/][ ]?\d{1,4}[a-zA-Z]?)?"
)  # 3-5, 45–47, 7/9
_DE_POSTCODE_CITY = (
    rf"(?:,?[ ]+(?:D-)?\d{{5}}[ ]+[{_UPPER}][{_LOWER}]+"
    rf"(?:[ -][{_UPPER}][{_LOWER}]+)?)?"
)
_EN_STREET = (
    r"(?:Street|St\.?|Road|Rd\.?|Avenue|Ave\.?|Lane|Ln\.?|Drive|Dr\.?|Boulevard|Blvd\.?|"
    r"Way|Court|Ct\.?|Place|Pl\.?|Square|Sq\.?|Terrace|Close|Crescent|Gardens|Row|"
    r"Mews|Hill|Grove)"
)
_EN_TAIL = (
    rf"(?:,[ ]+[{_UPPER}][a-z]+(?:[ ][{_UPPER}][a-z]+)?"
    r"(?:,?[ ]+(?:[A-Z]{1,2}\d[A-Z\d]?[ ]?\d[A-Z]{2}|[A-Z]{2}[ ]\d{5}|\d{5}))?)?"
)

_ADDRESS = re.compile(
    rf"(?:\b[{_UPPER}](?:[\w{_LOWER}-]|\.-)*(?i:{_STREET_SUFFIX})"  # Bgm.-Smidt-Str.
    rf"|\b[{_UPPER}][\w{_LOWER}-]+[ ]+{_STREET_WORD}"
    rf"|\b(?:Am|An[ ]der|An[ ]den|Auf[ ]dem|Auf[ ]der|Im|In[ ]der|In[ ]den|Zum|Zur"
    rf"|Unter[ ]den|Hinter[ ]der)"
    rf"(?:[ ]+[{_UPPER}][\w{_LOWER}-]+){{1,2}})"
    rf"[ ]+{_HOUSE_NUMBER}\b{_DE_POSTCODE_CITY}"
    rf"|\b\d{{1,5}}[A-Za-z]?[ ]+(?:[NSEW]\.?[ ]+)?"  # 1350 W Belmont St
    rf"(?:[{_UPPER}][a-z]+[ ]+){{1,3}}{_EN_STREET}(?!\w){_EN_TAIL}"
)


_WORDS_BACK = 4  # "In der Alten Gasse 3": the street starts at most four words back


def find(text: str) -> Iterator[Span]:
    # Every address has a house number: the pattern is only tried, anchored, at the few
    # word starts before each (and at the number itself, for the English order).
    done = 0
    for number_start, number_end in digit_runs(text):
        if number_start < done or not _house_number(text, number_start, number_end):
            continue
        for start in (*_word_starts_before(text, number_start), number_start):
            match = _ADDRESS.match(text, start)
            if match is not None and match.end() > number_start:
                value = match.group(0).rstrip()
                yield Span(start, start + len(value), "ADDRESS", value)
                done = match.end()
                break


def _house_number(text: str, start: int, end: int) -> bool:
    """A number of its own (not part of a date, an amount, a phone number) that follows a
    word and a space ("Hafen 12"), or (English order) comes before a capitalised word."""
    if end - start > 5 or (end < len(text) - 1 and text[end] in ".,:/" and text[end + 1].isdigit()):
        return False
    before = text[max(0, start - 2) : start]
    if len(before) == 2 and before[1] == " " and (before[0].isalpha() or before[0] == "."):
        return True
    after = text[end : end + 3]
    return (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in ".,/-")) and (
        (after[:2].startswith(" ") and after[1:2].isupper())
        or (after[:1].isalpha() and after[1:3].startswith(" "))
    )


def _word_starts_before(text: str, position: int) -> list[int]:
    """Where the words before `position` start, farthest first (up to `_WORDS_BACK`)."""
    starts: list[int] = []
    pos = position
    while len(starts) < _WORDS_BACK:
        while pos > 0 and text[pos - 1] == " ":
            pos -= 1
        end = pos
        while pos > 0 and (text[pos - 1].isalpha() or text[pos - 1] in ".-"):
            pos -= 1
        if pos == end:
            break
        starts.append(pos)
    return starts[::-1]
