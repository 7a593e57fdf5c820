"""The two independent evaluation sets are well formed (no detector involved): every line
parses, every span and look-alike lies inside its text and is the slice it says, marks do not
overlap, ids are unique across both files, and no line of the second set repeats the first.
A wrong offset would score a detector against the wrong letters, so this is checked for
itself, apart from the scores."""

from __future__ import annotations

import json

import pytest

from tests import DATA

FIRST = DATA / "privacy_cases_independent.jsonl"
SECOND = DATA / "privacy_cases_independent_2.jsonl"
KINDS = {"PERSON", "PHONE", "IBAN", "TAXID", "EMAIL", "ADDRESS", "BIRTHDATE", "PLATE", "URL"}
# The second set names the class of each line (the scorer ignores the field).
CLASSES = {"reg-compound", "reg-homonym", "reg-lower", "reg-genitive", "reg-translit",
           "reg-unicode", "reg-joined", "unreg-title-lower", "unreg-label", "unreg-double",
           "unreg-homonym", "unreg-twice", "keep", "mixed"}


def _lines(path):
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", [FIRST, SECOND], ids=lambda p: p.name)
def test_every_mark_is_the_slice_it_names(path):
    for number, line in enumerate(_lines(path), 1):
        case = json.loads(line)
        where = f"{path.name}:{number} {case.get('id')}"
        assert {"id", "lang", "people", "text", "spans", "lookalikes"} <= set(case), where
        assert case["lang"] in {"de", "en"}, where
        assert all(p["name"].strip() and all(a.strip() for a in p["aliases"])
                   for p in case["people"]), where
        text = case["text"]
        marks = case["spans"] + case["lookalikes"]
        for mark in marks:
            assert 0 <= mark["start"] < mark["end"] <= len(text), where
            assert text[mark["start"]:mark["end"]] == mark["value"], where
        assert all(s["kind"] in KINDS for s in case["spans"]), where
        assert all(look["family"] for look in case["lookalikes"]), where
        bounds = sorted((m["start"], m["end"]) for m in marks)
        assert all(a[1] <= b[0] for a, b in zip(bounds, bounds[1:])), where


def test_ids_are_unique_and_the_second_set_repeats_no_line_of_the_first():
    first = [json.loads(line) for line in _lines(FIRST)]
    second = [json.loads(line) for line in _lines(SECOND)]
    ids = [c["id"] for c in first + second]
    assert len(set(ids)) == len(ids)
    assert not {c["text"] for c in first} & {c["text"] for c in second}


def test_the_second_set_covers_every_kind_and_class_in_both_languages():
    cases = [json.loads(line) for line in _lines(SECOND)]
    assert 250 <= len(cases) <= 350
    assert {c["class"] for c in cases} == CLASSES
    assert {s["kind"] for c in cases for s in c["spans"]} == KINDS
    german = sum(c["lang"] == "de" for c in cases)
    assert 0.55 <= german / len(cases) <= 0.65
