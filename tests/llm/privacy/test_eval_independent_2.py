"""The privacy detectors against the second independent evaluation set,
`tests/data/privacy_cases_independent_2.jsonl`, written without reading the detectors or their
own set: names in every spelling (hyphenated and double names, lower case, genitives,
transliterated umlauts, invisible and look-alike characters, names run together), unregistered
names after titles, roles and billing labels, name-words beside their word use, and the other
kinds in lines with names. Scored by the same harness (`tests/privacy_eval.py`) and held to the
same bars as the first independent set (and every registered person found); each kind is its
own test. The figures, per kind and
per class of line, print in every run; a failure names its misses."""

from __future__ import annotations

from collections import defaultdict
from functools import cache

import pytest

from tests import DATA
from tests.llm.privacy.test_eval_independent import KEPT_BAR, KINDS, RECALL_BAR
from tests.privacy_eval import REGISTERED, Score, load, score

SECOND = DATA / "privacy_cases_independent_2.jsonl"


@cache
def _score() -> Score:
    return score(load(SECOND))


@cache
def _by_class() -> str:
    """Spans found and look-alikes kept per class of line (the `class` field)."""
    groups = defaultdict(list)
    for case in load(SECOND):
        groups[case["class"]].append(case)
    lines = []
    for name, cases in sorted(groups.items()):
        result = score(cases)
        found = sum(n for kind, n in result.found.items() if kind != REGISTERED)
        total = sum(n for kind, n in result.total.items() if kind != REGISTERED)
        kept, looks = sum(result.kept.values()), sum(result.lookalikes.values())
        lines.append(f"{name:<18} spans found {found}/{total}  look-alikes kept {kept}/{looks}")
    return "\n".join(lines)


def _report() -> str:
    return _score().report() + "\nper class:\n" + _by_class()


def test_the_figures_are_printed(capsys: pytest.CaptureFixture[str]) -> None:
    result = _score()
    with capsys.disabled():  # the figures show in every run, not only on failure
        print("\nsecond independent privacy set:")
        print("\n".join(line for line in result.report().splitlines()
                        if not line.startswith("miss: ")))
        print("per class:\n" + _by_class())


@pytest.mark.parametrize("kind", KINDS)
def test_recall_per_kind(kind: str) -> None:
    assert _score().recall(kind) >= RECALL_BAR, _report()


def test_every_registered_person_is_found() -> None:
    assert _score().recall(REGISTERED) == 1.0, _report()


def test_lookalikes_are_kept() -> None:
    assert _score().kept_ratio >= KEPT_BAR, _report()
