"""Routing and planning: which agents a message wants (`agents_for`), whether a short reply
answers the open question (`answers_question`), and a request split into one task per agent
(`split_tasks`)."""

from __future__ import annotations

import bisect
import re

from app.llm.offline import text as tx
from app.pipeline.offline_rules.words import GAP, STEM, WORD, WORD_START

LIST_WORD = re.compile(
    rf"(?:{WORD_START}{STEM}{WORD}liste\b|\bliste\b|\blisten\b|\bto-?do\b|\blist\b)", re.I)
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
    at most `GAP` characters apart (paired by bisection: linear in the text)."""
    mich = [m.start() for m in _MICH.finditer(text)]
    ends = [m.start() for m in _SENTENCE_END.finditer(text)]
    for erinnern in _ERINNERN.finditer(text):
        before = bisect.bisect_left(mich, erinnern.start()) - 1
        if before < 0 or erinnern.start() - mich[before] > GAP:
            continue
        end_between = bisect.bisect_left(ends, mich[before])
        if end_between == len(ends) or ends[end_between] > erinnern.start():
            return True
    return False


def agents_for(text: str) -> list[str]:
    return [name for name, hit in (("lists", wants_list(text)),
                                   ("reminders", wants_reminder(text))) if hit]


_QUOTED = re.compile(r"[„“\"”]([^„“\"”]+)[“”\"]")


def answers_question(words: str, question: str) -> bool:
    """A short answer, or one naming an option the question offered, answers it."""
    lowered = words.casefold()
    if any(name.casefold() in lowered for name in _QUOTED.findall(question)):
        return True
    return len(tx.words(words)) <= 6 and not agents_for(words)


_CLAUSE_SPLIT = re.compile(r"((?<!\s)\s*(?:[,;]|\bund\b|\band\b|\bdann\b|\bthen\b)\s*)", re.I)


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

