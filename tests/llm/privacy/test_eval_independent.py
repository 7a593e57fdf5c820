"""The privacy detectors against the independent evaluation set (issue 12's bar "on your set and
on an independent one"): `tests/data/privacy_cases_independent.jsonl`, written without reading
the detectors or their own set. Scored by the same harness (`tests/privacy_eval.py`); each kind
is its own test so a report names what falls short, and every failure prints the misses. Every
registered person is found (`REGISTERED`, 1.00)."""

from __future__ import annotations

from functools import cache

import pytest

from tests import DATA
from tests.privacy_eval import REGISTERED, Score, load, score

INDEPENDENT = DATA / "privacy_cases_independent.jsonl"
KINDS = ("PERSON", "PHONE", "IBAN", "TAXID", "EMAIL", "ADDRESS", "BIRTHDATE", "PLATE", "URL")
RECALL_BAR = 0.98
KEPT_BAR = 0.95


@cache
def _score() -> Score:
    return score(load(INDEPENDENT))


def test_the_set_is_annotated_consistently() -> None:
    cases = load(INDEPENDENT)
    assert len(cases) >= 180
    assert len({c["id"] for c in cases}) == len(cases)
    assert {c["lang"] for c in cases} == {"de", "en"}
    for case in cases:
        marks = case["spans"] + case["lookalikes"]
        for mark in marks:
            assert case["text"][mark["start"]:mark["end"]] == mark["value"], case["id"]
        bounds = sorted((m["start"], m["end"]) for m in marks)
        assert all(a[1] <= b[0] for a, b in zip(bounds, bounds[1:])), case["id"]
    assert {s["kind"] for c in cases for s in c["spans"]} == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_recall_per_kind(kind: str) -> None:
    result = _score()
    assert result.recall(kind) >= RECALL_BAR, result.report()


def test_every_registered_person_is_found() -> None:
    result = _score()
    assert result.recall(REGISTERED) == 1.0, result.report()


def test_lookalikes_are_kept() -> None:
    result = _score()
    assert result.kept_ratio >= KEPT_BAR, result.report()
