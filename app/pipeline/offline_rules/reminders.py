"""The reminders agent's rules: the due time of a German or English time expression
("morgen um 9", "in 10 Minuten", "übermorgen abends", "next Monday at 3 pm"), counted from
the prompt's "now", and the reminder's text as a to-do ("den Arzt anzurufen" → "Arzt
anrufen"); a command on an existing reminder — delete it ("Lösch die Erinnerung an den
Zahnarzt", "Delete the dentist reminder") or move it ("Verschieb den Zahnarzt auf 10 Uhr":
its day kept, "Move the dentist to tomorrow": its time kept) — names the reminder by its
words, as the prompt's list of open reminders shows them (`reminders_block`).

One module: the due-time grammar and the commands on a reminder read the same time expressions
and word lists.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, NamedTuple

from app.core.grammar import sentence
from app.llm.offline import text as tx
from app.llm.offline.lexicon import STOPWORDS
from app.pipeline.offline_rules.words import ARTICLE, GAP

DEFAULT_HOUR = 9  # a day without an hour ("morgen"): at nine

_UNITS = {
    "sekunde": 1,
    "sekunden": 1,
    "second": 1,
    "seconds": 1,
    "sek": 1,
    "sec": 1,
    "minute": 60,
    "minuten": 60,
    "minutes": 60,
    "min": 60,
    "stunde": 3600,
    "stunden": 3600,
    "hour": 3600,
    "hours": 3600,
    "std": 3600,
    "tag": 86400,
    "tagen": 86400,
    "tage": 86400,
    "day": 86400,
    "days": 86400,
}
_NUMBERS = {
    "einer": 1,
    "einem": 1,
    "eine": 1,
    "ein": 1,
    "a": 1,
    "an": 1,
    "one": 1,
    "zwei": 2,
    "two": 2,
    "drei": 3,
    "three": 3,
    "fünf": 5,
    "five": 5,
    "zehn": 10,
    "ten": 10,
    "halben": 0.5,
    "half": 0.5,
}
_IN = re.compile(
    r"\bin\s+(?P<n>\d+(?:[.,]\d+)?|"
    + "|".join(_NUMBERS)
    + r")\s+(?P<unit>"
    + "|".join(sorted(_UNITS, key=len, reverse=True))
    + r")\b",
    re.I,
)
_AT = re.compile(
    r"\b(?:um|at|gegen)\s+(?P<h>\d{1,2})(?:[:.](?P<m>\d{2}))?\s*(?:uhr\b)?"
    r"\s*(?P<ampm>am|pm)?",
    re.I,
)
# A move's new time: also "auf 10 Uhr", "to 10am".
_TO = re.compile(
    r"\b(?:um|at|gegen|auf|to|for)\s+(?P<h>\d{1,2})(?:[:.](?P<m>\d{2}))?"
    r"\s*(?:uhr\b)?\s*(?P<ampm>am|pm)?",
    re.I,
)
_DAY_WORDS = {
    "übermorgen": 2,
    "uebermorgen": 2,
    "morgen": 1,
    "tomorrow": 1,
    "heute": 0,
    "today": 0,
    "tonight": 0,
}
_PARTS_OF_DAY = {
    "früh": 8,
    "morgens": 8,
    "morning": 8,
    "mittag": 12,
    "mittags": 12,
    "noon": 12,
    "nachmittag": 15,
    "nachmittags": 15,
    "afternoon": 15,
    "abend": 19,
    "abends": 19,
    "evening": 19,
    "tonight": 20,
    "nacht": 21,
}
_WEEKDAYS = {
    name: index
    for names in (
        ("montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag"),
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    )
    for index, name in enumerate(names)
}
_REMIND_WHAT = (
    re.compile(
        r"\ban\s+(?:den|die|das|dem|meinen|meine|mein|unseren|unsere)?\s*(?P<what>.+)$", re.I
    ),
    re.compile(r"\bdaran,?\s*(?:dass\s+)?(?P<what>.+)$", re.I),
    re.compile(r"\b(?:to|about|of)\s+(?P<what>.+)$", re.I),
)
_TIME_WORDS = re.compile(
    r"\b(?:in\s+\S+\s+(?:" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")|"
    r"(?:um|at|gegen)\s+\d{1,2}(?:[:.]\d{2})?\s*(?:uhr)?\s*(?:am|pm)?|"
    r"(?:am|on|next)\s+(?:"
    + "|".join(_WEEKDAYS)
    + r")|"
    + "|".join(_DAY_WORDS)
    + "|"
    + "|".join(_PARTS_OF_DAY)
    + r"|bitte|please|zu erinnern|erinnern)\b",
    re.I,
)


def parse_when(text: str, now: dt.datetime) -> dt.datetime | None:
    """A German or English time expression relative to `now`; None when there is none."""
    return _moment(text, now, _AT, None)


def parse_move(text: str, now: dt.datetime, current: dt.datetime) -> dt.datetime | None:
    """The new time of a reminder due at `current` ("auf 10 Uhr": that day at ten — the next
    day when that has passed; "auf morgen": tomorrow at its time; "in einer Stunde"); None
    when the text names no time."""
    return _moment(text, now, _TO, current.astimezone(now.tzinfo))


def _moment(
    text: str, now: dt.datetime, clock_words: re.Pattern[str], base: dt.datetime | None
) -> dt.datetime | None:
    """A day and a time of day from `text`; what it leaves out comes from `base` (a day
    alone: at `DEFAULT_HOUR` without one), a time alone that has passed is the next day's."""
    lowered = text.lower()
    relative = _relative(lowered, now)
    if relative is not None:
        return relative
    day, clock = _day(lowered, now), _clock(lowered, clock_words)
    if day is None and clock is None:
        return None
    hour, minute = clock or ((base.hour, base.minute) if base else (DEFAULT_HOUR, 0))
    when = dt.datetime.combine(
        day or (base or now).date(), dt.time(hour, minute), tzinfo=now.tzinfo
    )
    if day is None and when <= now:
        when += dt.timedelta(days=1)  # "um 9" said at 10: tomorrow at 9
    return when


def _relative(lowered: str, now: dt.datetime) -> dt.datetime | None:
    relative = _IN.search(lowered)
    if not relative:
        return None
    raw = relative.group("n").replace(",", ".")
    count = _NUMBERS.get(raw) or float(raw)
    return now + dt.timedelta(seconds=count * _UNITS[relative.group("unit")])


def _day(lowered: str, now: dt.datetime) -> dt.date | None:
    day = None
    for word, offset in _DAY_WORDS.items():
        if re.search(rf"\b{word}\b", lowered):
            day = now.date() + dt.timedelta(days=offset)
            break
    for name, index in _WEEKDAYS.items():
        if re.search(rf"\b{name}\b", lowered):
            ahead = (index - now.weekday()) % 7 or 7
            day = now.date() + dt.timedelta(days=ahead)
    return day


def _clock(lowered: str, pattern: re.Pattern[str]) -> tuple[int, int] | None:
    at = pattern.search(lowered)
    if at:
        hour, minute = int(at.group("h")), int(at.group("m") or 0)
        if at.group("ampm") == "pm" and hour < 12:
            hour += 12
        if at.group("ampm") == "am" and hour == 12:
            hour = 0
        return (hour, minute) if 0 <= hour <= 23 and 0 <= minute <= 59 else None
    for word, part_hour in _PARTS_OF_DAY.items():
        if re.search(rf"\b{word}\b", lowered):
            return part_hour, 0
    return None


_SEPARABLE_ZU = re.compile(
    r"\b(ab|an|auf|aus|ein|fest|her|hin|los|mit|nach|vor|weg|zurück|zusammen)"
    r"zu(\w+en)\b",
    re.I,
)
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
                return sentence(what)
    return ""


_SHOW = re.compile(r"\b(?:zeig\w*|welche|show|list|what|which)\b", re.I)
_REMINDERS = re.compile(r"\berinnerungen\b|\breminders\b", re.I)
_REMINDER_WORD = re.compile(r"\berinnerung(?:en)?\b|\breminders?\b", re.I)
_LEAD = r"\A(?:(?:bitte|please|und|and|dann|then|noch|auch|mal|jetzt|now)\s+){0,3}"
_REMIND_ME = re.compile(
    r"\b(?:erinner(?:e|n|st|t)?|remind)\s+(?:(?:bitte|please|mal|doch|du)\s+)?"
    r"(?:mich|uns|me|us)\b",
    re.I,
)
# "Kannst du mich morgen an den Müll erinnern?": "mich" first, "erinnern" closes the request.
_ME_THEN_REMIND = re.compile(r"\b(?:mich|uns)\b[^.!?;\n]{0,120}?\berinnern\b", re.I)
_DELETE = re.compile(
    _LEAD + r"(?:lösch\w*|entfern\w*|streich\w*|vergiss|delete|remove|cancel|"
    r"cross(?:\s+off)?|drop|forget)\b",
    re.I,
)
_MOVE = re.compile(
    _LEAD + r"(?:verschieb\w*|verleg\w*|move|reschedule|push|postpone|shift)\b", re.I
)
# A delete or a move asked for ("Könntest du den Zahnarzt auf 11 Uhr verschieben?", "Could
# you move the dentist to 11?"): read as its imperative ("Verschieb den Zahnarzt auf 11 Uhr").
_REQUEST_DE = re.compile(
    r"\A(?:(?:bitte|und|dann|noch|auch|mal)\s+){0,3}(?:kannst|könntest|würdest|magst|kann|"
    r"könnte|würde|können|könnten|würden)\s+(?:du|sie)\s+(?:(?:bitte|mal|noch|auch|doch)\s+)"
    r"{0,3}(?P<rest>[^.!?;\n]+?)\s+(?P<verb>verschieb|verleg|lösch|entfern|streich)en"
    r"(?:\s+bitte)?\s*[?!.]*\s*$",
    re.I,
)
_REQUEST_EN = re.compile(
    r"\A(?:(?:and|then|please)\s+){0,2}(?:can|could|would|will)\s+you\s+(?:please\s+)?"
    r"(?P<rest>(?:move|reschedule|push|postpone|shift|delete|remove|cancel|drop)\b[^.!?;\n]*?)"
    r"(?:,?\s+please)?\s*[?!.]*\s*$",
    re.I,
)


def as_imperative(clause: str) -> str:
    """A request to delete or move a reminder as its imperative; any other clause as it is."""
    text = clause.strip()
    german = _REQUEST_DE.match(text)
    if german:
        return f"{german.group('verb').capitalize()} {german.group('rest')}"
    english = _REQUEST_EN.match(text)
    return english.group("rest") if english else clause


# What a delete or a move is about: "die Erinnerung an den Zahnarzt", "den Zahnarzt", "the
# dentist reminder"; up to the new time ("auf 10 Uhr", "to 10am") or the clause's end.
_TARGET = re.compile(
    r"\A\S+(?:\s+off)?\s+(?:(?:bitte|please|mal|doch)\s+)?(?:(?:die|the|my|meine)\s+)?"
    r"(?:(?:erinnerung|reminder)\s+(?:an|ans|for|about|to|of)?\s*)?"
    rf"(?P<what>[^.!?;\n]{{1,{GAP}}}?)"
    r"(?:\s+(?:reminder|erinnerung))?(?=\s+(?:auf|um|to|at|nach|for|until|till|in|by|"
    r"morgen|übermorgen|tomorrow|today|heute)\b|\s*[.!?]*$)",
    re.I,
)


class Known(NamedTuple):
    """An open reminder as the prompt lists it (`- text — 2026-12-01T09:00:00+01:00 (…)`)."""

    text: str
    due: dt.datetime | None


def known_reminders(block: str) -> list[Known]:
    found = []
    for line in block.splitlines():
        if not line.startswith("- "):
            continue
        text, _, when = line[2:].rpartition(" — ")
        if not text:
            continue
        try:
            due = dt.datetime.fromisoformat(when.split(" (", 1)[0].strip())
        except ValueError:
            due = None
        found.append(Known(text.strip(), due))
    return found


def content_words(text: str) -> set[str]:
    return {
        w.casefold()
        for w in tx.words(text)
        if len(w) >= 3 and w.casefold() not in STOPWORDS and not _REMINDER_WORD.fullmatch(w)
    }


def meant(clause: str, known: list[Known]) -> Known | None:
    """The open reminder the clause names by its words (the one sharing most of them)."""
    words = content_words(clause)
    scored = [(len(words & content_words(k.text)), -index, k) for index, k in enumerate(known)]
    best = max(scored, default=(0, 0, None), key=lambda s: s[:2])
    return best[2] if best[0] > 0 else None


def reminder_command(clause: str, known: list[Known], *, any_open: bool = False) -> bool:
    """Whether a command clause is one for the reminders agent: "erinnere mich …", showing
    the reminders, or deleting or moving one that it names (by the word "Erinnerung" or by
    an open reminder's words — with `any_open`, any words: which were open is not known; a
    move also by its new time), also asked for as a request."""
    clause = as_imperative(clause)
    if _REMIND_ME.search(clause) or _ME_THEN_REMIND.search(clause):
        return True
    if _SHOW.search(clause) and _REMINDERS.search(clause):
        return True
    names_one = any_open or bool(_REMINDER_WORD.search(clause)) or meant(clause, known) is not None
    if _DELETE.search(clause):
        return names_one
    if _MOVE.search(clause):
        now = dt.datetime.now().astimezone()
        return names_one or parse_move(clause, now, now) is not None
    return False


def target_text(clause: str, known: list[Known]) -> str:
    """Which reminder a delete or a move means: an open one's own text, else the words."""
    hit = meant(clause, known)
    if hit is not None:
        return hit.text
    found = _TARGET.match(clause.strip())
    if not found:
        return ""
    what = ARTICLE.sub("", " ".join(found.group("what").split()).strip(" „“\"'”"))
    return sentence(what)


def command(
    task: str, now_block: str, resuming: bool, reminders_block: str = "", asked_for: str = ""
) -> dict[str, Any]:
    """The `agent_reminders` answer for a task; `now_block` is the prompt's "now" line,
    `resuming` whether the task answers the agent's own question (the text is known then),
    `reminders_block` the open reminders as the prompt lists them, `asked_for` the task the
    question was asked for."""
    known = known_reminders(reminders_block)
    now = now_of(now_block)
    if resuming and _MOVE.search(as_imperative(asked_for)):
        # "Verschieb ihn auf 10 Uhr" – "Welche meinst du?" – "Den Zahnarzt": the new time
        # counts from the one the answer picked.
        hit = meant(task, known)
        if hit is not None and hit.due is not None:
            when = parse_move(as_imperative(asked_for), now, hit.due)
            return {"move": True, "text": hit.text, "due_at": when.isoformat() if when else ""}
    if _SHOW.search(task) and _REMINDERS.search(task):
        return {"show": True}
    if not (_REMIND_ME.search(task) or _ME_THEN_REMIND.search(task)):
        task = as_imperative(task)
        if _DELETE.search(task) and (_REMINDER_WORD.search(task) or meant(task, known)):
            return {"delete": True, "text": target_text(task, known)}
        if _MOVE.search(task):
            hit = meant(task, known)
            base = hit.due if hit is not None and hit.due is not None else now
            when = parse_move(task, now, base)
            return {
                "move": True,
                "text": target_text(task, known),
                "due_at": when.isoformat() if when else "",
            }
    when = parse_when(task, now)
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
