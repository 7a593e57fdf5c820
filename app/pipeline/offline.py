"""What the offline model answers for the pipelines' purposes (SPEC §7 `offline`).

Listed in `PURPOSE_HANDLERS`, which the wiring registers (`app.purposes`). Deterministic,
no model: small German and English rules over the
prompt frame (`app.pipeline.prompts.frame`: titled blocks), so that without any model server
"Setz Milch auf die Einkaufsliste" puts Milch on the list, "Erinnere mich morgen an den
Zahnarzt" sets a reminder, and everything else gets a plain, sensible reply. Perception
itself is the provider's own lexicon handler (`perception`).

Every answer is a dict of field values put over the neutral instance of the requested
schema (a value the schema does not accept leaves the neutral default), or text.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from typing import Any, NamedTuple

from app.llm.offline import handlers
from app.llm.offline import text as tx
from app.llm.offline.handlers import OfflineRequest, core_summary, perceive_text
from app.pipeline.prompts import BLOCKS, read_frame
from app.pipeline.tribunal import strip_labels

_W = r"[\wÄÖÜäöüß]"
# Every rule here runs on user text of up to `max_message_chars` (20 000): quantifiers are
# bounded, and whitespace runs and word-internal matches are entered only at their start, so
# that each rule stays linear in the text (tests/test_offline_rules_linear.py: worst cases).
_GAP = 200        # the most characters a rule looks across between two cue words
_WORD_START = rf"(?<!{_W})"
_STEM = rf"{_W}{{0,40}}"  # the head of a compound noun ("Einkaufs" in "Einkaufsliste")
HEAVY_EMOTIONS = frozenset({"trauer", "angst", "stress", "erschoepfung", "wut"})
DEFAULT_HOUR = 9


# --- reading the frame -----------------------------------------------------------------------

class Frame:
    """The blocks of the last user message, by their field name in `Blocks`."""

    def __init__(self, request: OfflineRequest) -> None:
        content = next((m["content"] for m in reversed(request.messages)
                        if m["role"] == "user"), "")
        self.system = next((m["content"] for m in request.messages if m["role"] == "system"), "")
        self.found = read_frame(content)
        self.language = "de"
        for language, blocks in BLOCKS.items():
            if any(title in self.found for title in vars_of(blocks)):
                self.language = language
                break
        self.blocks = BLOCKS[self.language]

    def get(self, name: str) -> str:
        return self.found.get(getattr(self.blocks, name), "")

    def last_user_words(self) -> str:
        users = [c for c in tx.contributions(self.get("history")) if c.is_user]
        return users[-1].text if users else ""

    def last_character_words(self) -> str:
        said = [c for c in tx.contributions(self.get("history")) if not c.is_user]
        return said[-1].text if said else ""


def vars_of(blocks: object) -> list[str]:
    return [getattr(blocks, name) for name in blocks.__dataclass_fields__]  # type: ignore[attr-defined]


# --- cues ------------------------------------------------------------------------------------

LIST_WORD = re.compile(rf"(?:{_WORD_START}{_STEM}{_W}liste\b|\bliste\b|\blisten\b|\bto-?do\b|\blist\b)", re.I)
LIST_VERB = re.compile(
    r"\b(?:setz\w*|schreib\w*|pack\w*|füg\w*|trag\w*|notier\w*|streich\w*|nimm|lösch\w*|"
    r"entfern\w*|zeig\w*|leer\w*|was steht|put|add|write|note|remove|cross|take|show|clear|"
    r"empty|what'?s on|what is on)\b", re.I)
REMINDER_CUE = re.compile(
    r"(?<!ich )\berinner(?:e|n|st)?\s{1,20}(?:mich|uns)\b|"
    r"\berinnerung(?:en)?\b|\bremind\b|\breminders?\b", re.I)


# "Brot und Eier auch noch drauf": onto the list just talked about.
ONTO_IT = re.compile(r"\b(?:(?:auch|noch|mit|bitte)\s+){0,3}(?:drauf|darauf|on it|on there)\b"
                     r"[\s.!]*$", re.I)


def wants_list(text: str) -> bool:
    return bool(LIST_WORD.search(text) and LIST_VERB.search(text) or ONTO_IT.search(text))


_ERINNERN = re.compile(r"\berinnern\b", re.I)
_MICH = re.compile(r"\bmich\b", re.I)
_SENTENCE_END = re.compile(r"[.?!]")


def wants_reminder(text: str) -> bool:
    return bool(REMINDER_CUE.search(text) or _mich_then_erinnern(text))


def _mich_then_erinnern(text: str) -> bool:
    """"…mich morgen an X erinnern": a "mich" before an "erinnern" in the same sentence,
    at most `_GAP` characters apart (paired by bisection: linear in the text)."""
    mich = [m.start() for m in _MICH.finditer(text)]
    ends = [m.start() for m in _SENTENCE_END.finditer(text)]
    for erinnern in _ERINNERN.finditer(text):
        before = bisect.bisect_left(mich, erinnern.start()) - 1
        if before < 0 or erinnern.start() - mich[before] > _GAP:
            continue
        end_between = bisect.bisect_left(ends, mich[before])
        if end_between == len(ends) or ends[end_between] > erinnern.start():
            return True
    return False


def agents_for(text: str) -> list[str]:
    return [name for name, hit in (("lists", wants_list(text)),
                                   ("reminders", wants_reminder(text))) if hit]


# --- router, planner ---------------------------------------------------------------------------

_QUOTED = re.compile(r"[„“\"”]([^„“\"”]+)[“”\"]")


def router(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    words = frame.last_user_words()
    pending = frame.get("pending")
    if pending and answers_question(words, pending):
        return {"answers_pending": True}
    text = frame.get("intent") or words
    agents = agents_for(text)
    return {"needs_action": bool(agents), "agents": agents}


def answers_question(words: str, question: str) -> bool:
    """A short answer, or one naming an option the question offered, answers it."""
    lowered = words.casefold()
    if any(name.casefold() in lowered for name in _QUOTED.findall(question)):
        return True
    return len(tx.words(words)) <= 6 and not agents_for(words)


_CLAUSE_SPLIT = re.compile(r"((?<!\s)\s*(?:[,;]|\bund\b|\band\b|\bdann\b|\bthen\b)\s*)", re.I)


def planner(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    return {"steps": [{"agent": agent, "task": task}
                      for agent, task in split_tasks(frame.get("request"))]}


def split_tasks(text: str) -> list[tuple[str, str]]:
    """Clauses joined by "und"/","/"and" become one task per agent, in order; a clause
    without a cue of its own belongs to its neighbour ("Setz Milch und Brot auf die Liste")."""
    pieces = _CLAUSE_SPLIT.split(text.strip())
    segments: list[list[str]] = [[pieces[0]]]
    for separator, piece in zip(pieces[1::2], pieces[2::2], strict=False):
        current = _agent("".join(segments[-1]))
        following = _agent(piece)
        if current and following and current != following:
            segments.append([piece])
        else:
            segments[-1].extend([separator, piece])
    tasks = [(_agent("".join(parts)), "".join(parts).strip(" ,;")) for parts in segments]
    return [(agent, task) for agent, task in tasks if agent and task]


def _agent(text: str) -> str:
    if wants_reminder(text):
        return "reminders"
    if LIST_WORD.search(text) or wants_list(text):
        return "lists"
    return ""


# --- the lists agent -------------------------------------------------------------------------

class Phrase(NamedTuple):
    items: str
    target: str


class VerbPhrase:
    """`<verb> <items> <joint> <target>` ("Setz Milch auf die Liste"), found in linear time.

    A single regex with a lazy `items` group rescans up to `_GAP` characters from every verb
    it meets; here verbs and joints are each found in one pass and paired by bisection, the
    first joint within `_GAP` characters after a verb (and for a target closed by a word,
    "Füg Milch der Liste hinzu", the first closing word within `_GAP` after the joint).
    """

    def __init__(self, verb: str, joint: str, closing: str | None = None) -> None:
        self.verb = re.compile(rf"\b(?:{verb})\s+", re.I)
        self.joint = re.compile(rf"(?<=\s)(?:{joint})(?=\s)", re.I)
        self.closing = re.compile(rf"(?<=\s)(?:{closing})\b", re.I) if closing else None

    def search(self, text: str) -> Phrase | None:
        joints = list(self.joint.finditer(text))
        joint_starts = [m.start() for m in joints]
        closing_starts = [m.start() for m in self.closing.finditer(text)] if self.closing else []
        for verb in self.verb.finditer(text):
            index = bisect.bisect_left(joint_starts, verb.end() + 1)
            if index == len(joints) or joint_starts[index] - verb.end() > _GAP:
                continue
            joint = joints[index]
            found = _POLITE.sub("", text[verb.end():joint.start()].strip(), count=1) or \
                text[verb.end():joint.start()].strip()
            if "\n" in found:
                continue
            target = self._target(text, joint.end(), closing_starts)
            if target is not None:
                return Phrase(found, target)
        return None

    def _target(self, text: str, start: int, closing_starts: list[int]) -> str | None:
        if self.closing is None:
            return _SENTENCE_REST.match(text, start).group().strip()
        index = bisect.bisect_left(closing_starts, start + 1)
        if index == len(closing_starts) or closing_starts[index] - start > _GAP:
            return None
        return text[start:closing_starts[index]].strip()


_POLITE = re.compile(r"^(?:bitte|please|noch)\s+(?=\S)", re.I)
_SENTENCE_REST = re.compile(rf"[^.!?]{{0,{_GAP}}}")
_ADD = VerbPhrase(r"setz\w*|schreib\w*|pack\w*|trag\w*|notier\w*|put|add|write|note(?: down)?",
                  r"auf|in|zu|zur|on|onto|to")
_ADD_HINZU = VerbPhrase(r"füg\w*", r"zur|zu der|der", closing="hinzu")
_REMOVE = VerbPhrase(r"streich\w*|nimm|lösch\w*|entfern\w*|remove|cross off|take",
                     r"von|aus|from|off")
_SHOW = re.compile(r"\b(?:zeig\w*|was steht|show|what'?s on|what is on|lies)\b", re.I)
_CLEAR = re.compile(r"\b(?:leer\w*|clear|empty)\b|\blösch\w*\s+(?:die|meine)\s+(?:ganze\s+)?"
                    rf"{_W}{{0,40}}liste\b", re.I)
_CREATE = re.compile(r"\bneue\w*\s+liste\b|\bnew list\b|\banleg\w*|\bleg\w*\b.{0,200}?\ban\b|"
                     r"\bcreate\b|\bneu\b|\bnew\b", re.I)
_NAMED_LIST = re.compile(rf"\b(?i:liste|list)\s+[„\"“']?(?P<name>[A-ZÄÖÜ]{_W}*)", re.U)
_COMPOUND_LIST = re.compile(rf"{_WORD_START}(?P<name>{_STEM}{_W}liste)\b", re.I)
_EN_LIST = re.compile(r"\b(?:the|my|our)\s+(?P<name>[\w-]+(?:\s[\w-]+)?\s+list)\b", re.I)
_ITEM_SPLIT = re.compile(r"(?<!\s)\s*[,&]\s*|(?<!\s)\s+(?:und|and)\s+", re.I)
_ARTICLE = re.compile(r"^(?:noch\s+|bitte\s+)?(?:ein|eine|einen|die|der|das|den|the|a|an|some)"
                      r"\s+", re.I)


def last_list(block: str) -> str:
    """The list changed last: the last line of the lists block ("- Name: items")."""
    names = [line[2:].split(":", 1)[0].strip() for line in block.splitlines()
             if line.startswith("- ")]
    return names[-1] if names else ""


def list_name(text: str) -> str:
    for pattern in (_NAMED_LIST, _COMPOUND_LIST, _EN_LIST):
        match = pattern.search(text)
        if match:
            return match.group("name").strip(" „“\"'”")
    return ""


_FILLERS = re.compile(r"\b(?:wieder|bitte|noch|auch|mal|doch|gleich|please|again|too)\b", re.I)


def items(text: str) -> list[str]:
    found = []
    for part in _ITEM_SPLIT.split(text.strip(" .!?")):
        # "Nimm Milch wieder von der Liste": the filler words are no part of the item.
        part = " ".join(_FILLERS.sub(" ", part).split())
        item = _ARTICLE.sub("", part.strip(" „“\"'”.")).strip()
        if item:
            found.append(item)
    return found


def parse_list_task(text: str) -> dict[str, Any]:
    command: dict[str, Any] = {"list_name": list_name(text)}
    removed = _REMOVE.search(text)
    added = _ADD_HINZU.search(text) or _ADD.search(text)
    if removed:
        command["remove"] = items(removed.items)
    elif added and LIST_WORD.search(added.target or text):
        command["add"] = items(added.items)
    elif ONTO_IT.search(text):
        command["add"] = items(text[:ONTO_IT.search(text).start()])
    elif _CLEAR.search(text):
        command["clear"] = True
    if _SHOW.search(text):
        command["show"] = True
    if re.search(r"\bneue\w*\s+liste\b|\bnew list\b|\banleg", text, re.I):
        command["create_list"] = True
    return command


def agent_lists(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    task = frame.get("task")
    if not frame.get("pending"):
        command = parse_list_task(task)
        if not command["list_name"] and ONTO_IT.search(task):
            command["list_name"] = last_list(frame.get("lists"))
        return command
    # Resuming: the task is the user's answer to "which list?".
    command = parse_list_task(task)
    if command.get("add") or command.get("remove") or command.get("show") or \
            command.get("clear"):
        return command
    if _CREATE.search(task):
        return {"create_list": True, "list_name": list_name(task)}
    answer = " ".join(tx.words(task))
    return {"list_name": command.get("list_name") or answer}


# --- the reminders agent -----------------------------------------------------------------------

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
            what = base_form(_ARTICLE.sub("", what))
            if what:
                return what[0].upper() + what[1:]
    return ""


def agent_reminders(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    task = frame.get("task")
    now = _now(frame.get("now"))
    if re.search(r"\b(?:zeig\w*|welche|show|list|what)\b", task, re.I) and \
            re.search(r"\berinnerungen\b|\breminders\b", task, re.I):
        return {"show": True}
    when = parse_when(task, now)
    command: dict[str, Any] = {"due_at": when.isoformat() if when else ""}
    if not frame.get("pending"):
        command["text"] = reminder_text(task)
    return command


def _now(block: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(block.split(" (", 1)[0].strip())
    except ValueError:
        return dt.datetime.now().astimezone()


# --- responder, thinker, corrector, salience ---------------------------------------------------

PHRASES = {
    "de": {"continue": "Ich wollte noch einmal "
           "nachfragen: Wie geht es dir jetzt damit?",
           "retry": "Lass mich das noch ergänzen: Was genau brauchst du von mir?",
           "commitment": "recherche", "follow_up": "nachfragen"},
    "en": {"continue": "I wanted to check in "
           "once more: how are you feeling about it now?",
           "retry": "Let me add to that: what exactly do you need from me?",
           "commitment": "look into it", "follow_up": "ask how they are"},
}
_COMMITMENT = re.compile(
    r"\b(?:ich schau\w*|ich seh\w* (?:mal )?nach|ich werde\b[^.?!]*\b(?:nachsehen|nachschauen|"
    r"recherchieren|herausfinden|prüfen|suchen)|ich kümmere mich|i'?ll look into|"
    r"i will look into|let me check|i'?ll find out)\b", re.I)


def _lines(block: str) -> list[str]:
    return [line.lstrip("-• ").strip() for line in block.split("\n") if line.strip()]


_PLAIN_RESPONDER = handlers.HANDLERS["responder"]


def responder(request: OfflineRequest) -> str:
    frame = Frame(request)
    if not frame.found:  # not a pipeline prompt: the provider's own reflective reply
        return str(_PLAIN_RESPONDER(request))
    words = PHRASES[frame.language]
    said = " ".join(_lines(frame.get("actions")))
    question = frame.get("question")
    if question:
        return f"{said} {question}".strip()
    if said:
        return said
    thought = frame.get("thought")
    if thought:  # the character's own thought, in its own words already
        return thought
    task = frame.get("task")
    if frame.get("retry"):
        return words["retry"]
    if task and (BLOCKS[frame.language].intent in task or "noch einmal" in task
                 or "once more" in task):
        return words["continue"]
    return handlers.reflective_reply(frame.last_user_words(), request.max_chars,
                                     previous=frame.last_character_words())


def thinker(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    words = PHRASES[frame.language]
    answer = frame.get("answer")
    asked = frame.get("request")
    if _COMMITMENT.search(answer):
        return {"commitment": True, "intent": words["commitment"]}
    if asked and not answer.strip():
        return {"misses_request": True, "reason": "-"}
    if asked and "?" not in answer and perceive_text(asked).emotion in HEAVY_EMOTIONS:
        return {"follow_up": True, "intent": words["follow_up"]}
    return {}


_NAME_IN_SYSTEM = re.compile(r"(?:Antwort von|answer of)\s+([^\s,]+)")


def corrector(request: OfflineRequest) -> str:
    frame = Frame(request)
    name = _NAME_IN_SYSTEM.search(frame.system)
    text = strip_labels(frame.get("answer"), name.group(1) if name else "Nova")
    kept = [line for line in text.split("\n") if not line.lstrip().startswith("###")]
    return "\n".join(kept).strip()


def salience(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    words = frame.last_user_words()
    if not words.strip():
        return {}
    seen = perceive_text(words)
    importance = 0.1
    if seen.emotion != "neutral":
        importance += 0.3 if seen.emotion in HEAVY_EMOTIONS else 0.2
    if {"erinnerung", "notiz"} & set(seen.intentions):
        importance += 0.3
    if re.search(r"\d", words) or any(w[0].isupper() for w in tx.words(words)[1:]):
        importance += 0.2
    importance = round(min(importance, 1.0), 2)
    return {"importance": importance,
            "segments": [core_summary(words)] if importance >= 0.5 else []}


def salience_character(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    said = _lines(frame.get("actions"))
    mood = re.search(r"emotion:\s*([^,\n]+)", frame.get("mood"))
    return {"importance": 0.7 if said else 0.3, "segments": said,
            "emotion": mood.group(1).strip() if mood else ""}


PURPOSE_HANDLERS = {
    "salience": salience, "router": router, "planner": planner, "agent_lists": agent_lists,
    "agent_reminders": agent_reminders, "responder": responder, "thinker": thinker,
    "corrector": corrector, "salience_character": salience_character,
}
