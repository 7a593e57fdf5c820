"""The reminders agent's rules: the due time of a German or English time expression
("morgen um 9", "in 10 Minuten", "übermorgen abends", "next Monday at 3 pm"), counted from
the prompt's "now", and the reminder's text as a to-do ("den Arzt anzurufen" → "Arzt
anrufen")."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from app.pipeline.offline_rules.words import ARTICLE

DEFAULT_HOUR = 9  # a day without an hour ("morgen"): at nine

_UNITS = {
    "sekunde": 1, "sekunden": 1, "second": 1, "seconds": 1, "sek": 1, "sec": 1,
    "minute": 60, "minuten": 60, "minutes": 60, "min": 60,
    "stunde": 3600, "stunden": 3600, "hour": 3600, "hours": 3600, "std": 3600,
    "tag": 86400, "tagen": 86400, "tage": 86400, "day": 86400, "days": 86400,
}
_NUMBERS = {"einer": 1, "einem": 1, "eine": 1, "ein": 1, "a": 1, "an": 1, "one": 1,
            "zwei": 2, "two": 2, "drei": 3, "three": 3, "fünf": 5, "five": 5, "zehn": 10,
            "ten": 10, "halben": 0.5, "half": 0.5}
_IN = re.compile(r"\bin\s+(?P<n>\d+(?:[.,]\d+)?|" + "|".join(_NUMBERS) + r")\s+(?P<unit>"
                 + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")\b", re.I)
_AT = re.compile(r"\b(?:um|at|gegen)\s+(?P<h>\d{1,2})(?:[:.](?P<m>\d{2}))?\s*(?:uhr\b)?"
                 r"\s*(?P<ampm>am|pm)?", re.I)
_DAY_WORDS = {"übermorgen": 2, "uebermorgen": 2, "morgen": 1, "tomorrow": 1, "heute": 0,
              "today": 0, "tonight": 0}
_PARTS_OF_DAY = {"früh": 8, "morgens": 8, "morning": 8, "mittag": 12, "mittags": 12,
                 "noon": 12, "nachmittag": 15, "nachmittags": 15, "afternoon": 15,
                 "abend": 19, "abends": 19, "evening": 19, "tonight": 20, "nacht": 21}
_WEEKDAYS = {name: index for names in (
    ("montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag"),
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
    for index, name in enumerate(names)}
_REMIND_WHAT = (
    re.compile(r"\ban\s+(?:den|die|das|dem|meinen|meine|mein|unseren|unsere)?\s*(?P<what>.+)$",
               re.I),
    re.compile(r"\bdaran,?\s*(?:dass\s+)?(?P<what>.+)$", re.I),
    re.compile(r"\b(?:to|about|of)\s+(?P<what>.+)$", re.I),
)
_TIME_WORDS = re.compile(
    r"\b(?:in\s+\S+\s+(?:" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")|"
    r"(?:um|at|gegen)\s+\d{1,2}(?:[:.]\d{2})?\s*(?:uhr)?\s*(?:am|pm)?|"
    r"(?:am|on|next)\s+(?:" + "|".join(_WEEKDAYS) + r")|" + "|".join(_DAY_WORDS) + "|"
    + "|".join(_PARTS_OF_DAY) + r"|bitte|please|zu erinnern|erinnern)\b", re.I)


def parse_when(text: str, now: dt.datetime) -> dt.datetime | None:
    """A German or English time expression relative to `now`; None when there is none."""
    lowered = text.lower()
    relative = _IN.search(lowered)
    if relative:
        raw = relative.group("n").replace(",", ".")
        count = _NUMBERS.get(raw) or float(raw)
        return now + dt.timedelta(seconds=count * _UNITS[relative.group("unit")])
    day = None
    for word, offset in _DAY_WORDS.items():
        if re.search(rf"\b{word}\b", lowered):
            day = now.date() + dt.timedelta(days=offset)
            break
    for name, index in _WEEKDAYS.items():
        if re.search(rf"\b{name}\b", lowered):
            ahead = (index - now.weekday()) % 7 or 7
            day = now.date() + dt.timedelta(days=ahead)
    hour, minute = None, 0
    at = _AT.search(lowered)
    if at:
        hour, minute = int(at.group("h")), int(at.group("m") or 0)
        if at.group("ampm") == "pm" and hour < 12:
            hour += 12
    else:
        for word, part_hour in _PARTS_OF_DAY.items():
            if re.search(rf"\b{word}\b", lowered):
                hour = part_hour
                break
    if day is None and hour is None:
        return None
    if hour is None or not (0 <= hour <= 23 and 0 <= minute <= 59):
        hour, minute = DEFAULT_HOUR, 0
    when = dt.datetime.combine(day or now.date(), dt.time(hour, minute), tzinfo=now.tzinfo)
    if day is None and when <= now:
        when += dt.timedelta(days=1)  # "um 9" said at 10: tomorrow at 9
    return when


_SEPARABLE_ZU = re.compile(r"\b(ab|an|auf|aus|ein|fest|her|hin|los|mit|nach|vor|weg|zurück|zusammen)"
                           r"zu(\w+en)\b", re.I)
_ZU_INFINITIVE = re.compile(r"\bzu\s+(\w+en)$", re.I)


def base_form(what: str) -> str:
    """A reminder's text as a to-do, in the infinitive: "die Wäsche aufzuhängen" →
    "Wäsche aufhängen", "den Arzt anzurufen" → "Arzt anrufen", "Oma zu besuchen" →
    "Oma besuchen"."""
    what = _SEPARABLE_ZU.sub(r"\1\2", what)
    return _ZU_INFINITIVE.sub(r"\1", what)


def reminder_text(task: str) -> str:
    for pattern in _REMIND_WHAT:
        match = pattern.search(task)
        if match:
            what = _TIME_WORDS.sub(" ", match.group("what"))
            what = " ".join(what.split()).strip(" ,.!?")
            what = base_form(ARTICLE.sub("", what))
            if what:
                return what[0].upper() + what[1:]
    return ""



_SHOW = re.compile(r"\b(?:zeig\w*|welche|show|list|what)\b", re.I)
_REMINDERS = re.compile(r"\berinnerungen\b|\breminders\b", re.I)


def command(task: str, now_block: str, resuming: bool) -> dict[str, Any]:
    """The `agent_reminders` answer for a task; `now_block` is the prompt's "now" line,
    `resuming` whether the task answers the agent's own "when?" (the text is known then)."""
    if _SHOW.search(task) and _REMINDERS.search(task):
        return {"show": True}
    when = parse_when(task, now_of(now_block))
    found: dict[str, Any] = {"due_at": when.isoformat() if when else ""}
    if not resuming:
        found["text"] = reminder_text(task)
    return found


def now_of(block: str) -> dt.datetime:
    """The moment of the prompt's "now" line (`2026-11-30T10:15:00+01:00 (Montag)`); this
    machine's now when the line is missing or unreadable."""
    try:
        return dt.datetime.fromisoformat(block.split(" (", 1)[0].strip())
    except ValueError:
        return dt.datetime.now().astimezone()
