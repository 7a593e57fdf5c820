"""Time tokens in a user's line (seed 004 §16.1: `time` must be a bare time token).

A token is a clock time (`6:00`, `06:00`, `6:00 Uhr`, `6.30 Uhr`, `9 Uhr`, `7:30 am`) or a
spoken German time (`halb acht`, `viertel nach zehn`, `viertel vor zehn`, `dreiviertel acht`,
`gegen 9`, `gegen neun Uhr`; capitalised at the start of a sentence too). `parse` turns a
token into minutes after midnight, for the rule that a justified reorder never goes
backwards in time.
"""

from __future__ import annotations

import re
import unicodedata

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

_FORMS = (_CLOCK, _FULL_HOUR, _HALF, _QUARTER, _THREE_QUARTERS, _ABOUT)
_WHITESPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """NFKC, and every run of whitespace one space, trimmed — nothing else (no case
    folding, no punctuation stripping)."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def _hour(raw: str) -> int:
    return int(raw) if raw.isdigit() else NUMBER_WORDS[raw]


def parse(token: str) -> int | None:
    """Minutes after midnight of a bare time token, or None when `token` is not one."""
    text = normalize(token)
    for form in _FORMS:
        match = form.fullmatch(text)
        if match is None:
            continue
        hour = _hour(match["h"])
        if form is _CLOCK:
            hour, minute = hour, int(match["m"])
        elif form is _FULL_HOUR or form is _ABOUT:
            minute = 0
        elif form is _HALF:
            hour, minute = hour - 1, 30
        elif form is _THREE_QUARTERS:
            hour, minute = hour - 1, 45
        else:
            hour, minute = (hour, 15) if match["dir"] == "nach" else (hour - 1, 45)
        ampm = match.groupdict().get("ampm")
        if ampm and ampm.startswith("p") and hour < 12:
            hour += 12
        return (hour % 24) * 60 + minute
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


def find(line: str) -> list[str]:
    """The time tokens standing in a line, in order (for the offline model)."""
    text = normalize(line)
    found: list[tuple[int, str]] = []
    taken: list[range] = []
    for form in (_QUARTER, _THREE_QUARTERS, _HALF, _ABOUT, _CLOCK, _FULL_HOUR):
        for match in form.finditer(text):
            span = range(match.start(), match.end())
            if any(span.start < other.stop and other.start < span.stop for other in taken):
                continue
            if occurs_in(match.group(0), text):
                taken.append(span)
                found.append((match.start(), match.group(0)))
    return [token for _, token in sorted(found)]
