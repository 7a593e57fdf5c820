"""Every offline rule stays linear in the text (issue 11, item 1).

The offline model's rules run on user messages of up to `max_message_chars` (20 000). A rule
that backtracks quadratically on such a message stalls every user of the server. Each
module-level pattern of the offline model and the tribunal is run against worst-case inputs
built from its own cue words and from characters that make unbounded quantifiers backtrack.
Times are the test thread's CPU time: on a shared machine wall time also counts other
processes, and a quadratic rule misses the limit by orders of magnitude either way.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Iterator

import pytest

from app.llm.offline import lexicon

LENGTH = 20_000
LIMIT_SECONDS = 0.050
MODULES = ("app.pipeline.offline", "app.pipeline.offline_rules.words",
           "app.pipeline.offline_rules.clauses",
           "app.pipeline.offline_rules.routing", "app.pipeline.offline_rules.lists",
           "app.pipeline.offline_rules.reminders", "app.pipeline.offline_rules.pronouns",
           "app.llm.offline.handlers",
           "app.llm.offline.text", "app.llm.offline.lexicon", "app.pipeline.tribunal",
           "app.llm.providers.offline")
GENERIC = ("a", "ä", " ", "a ", "aa ", ".", "\n", "a\n", "(", "[", "( a", "1", "1 ", "a, ",
           "\"a", "„a", "[1] ", "ich ", "x-", "\t")


def patterns() -> Iterator[tuple[str, re.Pattern[str]]]:
    for name in MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            values = value if isinstance(value, tuple) else (value,)
            for index, item in enumerate(values):
                if isinstance(item, re.Pattern):
                    yield f"{name}.{attr}[{index}]", item
    for family in (lexicon.EMOTION_CUES, lexicon.INTENTION_CUES, lexicon.MODE_CUES):
        for label, cues in family.items():
            if cues._pattern is not None:
                yield f"lexicon cues {label}", cues._pattern


def worst_inputs(pattern: re.Pattern[str]) -> Iterator[str]:
    """Repetitions of what makes a quantifier run on: single characters, and each cue word
    of the pattern alone, followed by a space and followed by an opening bracket."""
    words = sorted(set(re.findall(r"[A-Za-zÄÖÜäöüß]{2,}", pattern.pattern)))
    units = [*GENERIC, *words, *(w + " " for w in words), *(w + " (" for w in words)]
    for unit in units:
        yield (unit * (LENGTH // len(unit) + 1))[:LENGTH]


def slowest(pattern: re.Pattern[str]) -> tuple[float, str]:
    worst = (0.0, "")
    for text in worst_inputs(pattern):
        for run in (pattern.search, pattern.findall):
            start = time.thread_time()
            run(text)
            took = time.thread_time() - start
            if took > worst[0]:
                worst = (took, text[:12])
    return worst


@pytest.mark.parametrize("name,pattern", list(patterns()), ids=lambda v: v if isinstance(v, str) else "")
def test_rule_is_linear_on_20000_characters(name: str, pattern: re.Pattern[str]) -> None:
    took, head = slowest(pattern)
    if took > LIMIT_SECONDS:  # a busy machine gets a second chance; a quadratic rule won't pass
        took, head = min(slowest(pattern), (took, head))
    assert took <= LIMIT_SECONDS, f"{name} took {took * 1000:.0f} ms on {head!r}…"


def test_list_phrases_are_found_in_linear_time() -> None:
    """The list verbs' phrases (not single regexes) on worst cases built from their words."""
    from app.pipeline.offline_rules import lists

    for phrase in (lists._ADD, lists._ADD_HINZU, lists._REMOVE):
        for unit in ("setz ", "put (", "füg der ", "nimm ", "nimm von ", "a "):
            text = (unit * (LENGTH // len(unit) + 1))[:LENGTH]
            # and closed at the end, so the phrases closed by a word ("… hinzu") look at it
            for worst in (text, text[:LENGTH - 6] + " hinzu"):
                start = time.thread_time()
                phrase.search(worst)
                assert time.thread_time() - start <= 2 * LIMIT_SECONDS, unit


def test_commands_are_found_in_linear_time() -> None:
    """The router's whole reading (clause starts, command forms, each agent's object) on
    worst cases built from command words, joints and clause breaks."""
    from app.pipeline.offline_rules.routing import Known, agents_for, split_tasks

    known = Known.of("- Einkaufsliste: Milch, Eier", "- Zahnarzt — 2026-12-01T09:00:00+01:00")
    assert agents_for("Kannst du mich morgen an den Zahnarzt erinnern?") == ["reminders"]
    assert agents_for("Frag mich. Erinnern ist schwer.") == []
    for unit in ("mich ", "erinnern ", "mich (", "mich erinnern. ", "setz ", "streich die ",
                 "Streich die Eier, ", "und setz Milch auf die Liste ", "kannst du ", ", ",
                 "„setz ", "verschieb den Zahnarzt ", "bitte bitte ", "a und ", "remind me "):
        text = (unit * (LENGTH // len(unit) + 1))[:LENGTH]
        for run in (agents_for, split_tasks):
            start = time.thread_time()
            run(text, known)
            took = time.thread_time() - start
            if took > 8 * LIMIT_SECONDS:  # a busy machine gets a second chance
                start = time.thread_time()
                run(text, known)
                took = time.thread_time() - start
            assert took <= 8 * LIMIT_SECONDS, (unit, run.__name__, took)
