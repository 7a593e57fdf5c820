"""Time tokens in a user's line (seed 004 §16.1: `time` must be a bare time token).

A token is a clock time (`6:00`, `06:00`, `6:00 Uhr`, `6.30 Uhr`, `9 Uhr`, `7:30 am`), a
spoken German time (`halb acht`, `viertel nach zehn`, `viertel vor zehn`, `dreiviertel acht`,
`gegen 9`, `gegen neun Uhr`; capitalised at the start of a sentence too) or a spoken English
one (`half past nine`, `quarter to ten`, `seven o'clock`). `parse` turns a token into minutes
after midnight, for the rule that a justified reorder never goes backwards in time.

`spans` finds the times a sentence states, for the narration's check (`app.journal.support`):
the tokens, and besides them an hour after "um", "at" or "around" ("um 6", "at seven") and an
hour in words before "Uhr" ("sechs Uhr") — loose forms that a narration writes and that are
never a bare token of stage 1.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

NUMBER_WORDS = {
    "null": 0,
    "eins": 1,
    "zwei": 2,
    "drei": 3,
    "vier": 4,
    "fünf": 5,
    "sechs": 6,
    "sieben": 7,
    "acht": 8,
    "neun": 9,
    "zehn": 10,
    "elf": 11,
    "zwölf": 12,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_HOUR = r"(?:[01]?\d|2[0-3])"
_WORD = "(?:" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + ")"
_HOUR_ANY = rf"(?:{_HOUR}|{_WORD})"

_CLOCK = re.compile(
    rf"(?P<h>{_HOUR})[:.](?P<m>[0-5]\d)(?:\s?(?P<ampm>am|pm|a\.m\.|p\.m\.)"
    rf"|\s(?:Uhr|h))?"
)
_FULL_HOUR = re.compile(rf"(?P<h>{_HOUR})\s?(?:Uhr|h|(?P<ampm>am|pm))")
_HALF = re.compile(rf"[Hh]alb (?P<h>{_HOUR_ANY})")
_QUARTER = re.compile(rf"[Vv]iertel (?P<dir>nach|vor) (?P<h>{_HOUR_ANY})")
_THREE_QUARTERS = re.compile(rf"[Dd]reiviertel (?P<h>{_HOUR_ANY})")
_ABOUT = re.compile(rf"[Gg]egen (?P<h>{_HOUR_ANY})(?: Uhr)?")
# English spoken times: "half past nine" is 9:30 (German "halb zehn").
_HALF_PAST = re.compile(rf"[Hh]alf past (?P<h>{_HOUR_ANY})")
_QUARTER_EN = re.compile(rf"(?:[Aa] )?[Qq]uarter (?P<dir>past|to) (?P<h>{_HOUR_ANY})")
_OCLOCK = re.compile(rf"(?P<h>{_HOUR_ANY}) o['’]clock")

_FORMS = (
    _CLOCK, _FULL_HOUR, _HALF, _QUARTER, _THREE_QUARTERS, _ABOUT, _HALF_PAST, _QUARTER_EN,
    _OCLOCK,
)  # fmt: skip
# Longest first where forms overlap ("viertel nach zehn" before "zehn"), as `find` takes them.
_FIND_ORDER = (
    _QUARTER, _QUARTER_EN, _THREE_QUARTERS, _HALF, _HALF_PAST, _ABOUT, _OCLOCK, _CLOCK,
    _FULL_HOUR,
)  # fmt: skip
# The loose forms of `spans` (no bare token): an hour after a preposition of time, with
# "Uhr", "am"/"pm" or nothing after it, and an hour in words before "Uhr".
_AT = re.compile(
    rf"(?:[Uu]m|[Aa]t|[Aa]round) (?P<t>(?P<h>{_HOUR_ANY})(?:\s?(?P<ampm>am|pm)| Uhr)?)"
)
_WORD_HOUR = re.compile(rf"(?P<h>{_WORD}) Uhr")
_WHITESPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """NFKC, and every run of whitespace one space, trimmed — nothing else (no case
    folding, no punctuation stripping)."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def _hour(raw: str) -> int:
    return int(raw) if raw.isdigit() else NUMBER_WORDS[raw]


def _minutes(form: re.Pattern[str], match: re.Match[str]) -> int:
    hour = _hour(match["h"])
    if form is _CLOCK:
        minute = int(match["m"])
    elif form is _HALF:
        hour, minute = hour - 1, 30
    elif form is _HALF_PAST:
        minute = 30
    elif form is _THREE_QUARTERS:
        hour, minute = hour - 1, 45
    elif form is _QUARTER or form is _QUARTER_EN:
        hour, minute = (hour, 15) if match["dir"] in ("nach", "past") else (hour - 1, 45)
    else:
        minute = 0
    ampm = match.groupdict().get("ampm")
    if ampm and ampm.startswith("p") and hour < 12:
        hour += 12
    return (hour % 24) * 60 + minute


def parse(token: str) -> int | None:
    """Minutes after midnight of a bare time token, or None when `token` is not one."""
    text = normalize(token)
    for form in _FORMS:
        match = form.fullmatch(text)
        if match is not None:
            return _minutes(form, match)
    return None


def is_pure(token: object) -> bool:
    return isinstance(token, str) and parse(token) is not None


def occurs_in(token: str, line: str) -> bool:
    """Does the token stand in the line as a token of its own (not inside a longer number
    or word)? Both sides normalized the same way as evidence."""
    needle = normalize(token)
    if not needle:
        return False
    pattern = rf"(?<![\w:.]){re.escape(needle)}(?![\w]|[:.]\d)"
    return re.search(pattern, normalize(line)) is not None


class Span(NamedTuple):
    """A time stated in a text: where (`start`, `end` of the normalized text), what it says
    (`text`, the time without a preposition before it), its minutes after midnight, and
    whether it may be either half of the day (`either_half`: no am/pm and an hour of 1 to 12,
    so "halb eins" is 0:30 or 12:30, "um 7" is 7:00 or 19:00)."""

    start: int
    end: int
    text: str
    minutes: int
    either_half: bool


def _matches(text: str, forms: Sequence[re.Pattern[str]]) -> list[Span]:
    found: list[Span] = []
    for form in forms:
        for match in form.finditer(text):
            group = "t" if "t" in form.groupindex else 0
            start, end = match.start(group), match.end(group)
            if any(start < other.end and other.start < end for other in found):
                continue
            if not occurs_in(match.group(0), text):
                continue
            hour = _hour(match["h"])
            either = not match.groupdict().get("ampm") and 1 <= hour <= 12
            found.append(Span(start, end, match[group], _minutes(form, match), either))
    return sorted(found)


def find(line: str) -> list[str]:
    """The time tokens standing in a line, in order (for the offline model)."""
    return [span.text for span in _matches(normalize(line), _FIND_ORDER)]


def spans(text: str) -> list[Span]:
    """Every time `text` states (its tokens and the loose forms, see the module), in order,
    with positions in `normalize(text)`."""
    return _matches(normalize(text), (*_FIND_ORDER, _AT, _WORD_HOUR))
