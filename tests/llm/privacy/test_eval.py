"""The privacy detectors against our own annotated set (issue 12's bar): recall ≥ 0.98 for
every kind, every registered person found (1.00), look-alikes kept ≥ 0.95. The figures are
printed in every run and named in the failure message."""

from __future__ import annotations

from app.llm.privacy import KINDS
from tests.privacy_eval import REGISTERED, load, score

RECALL_BAR = 0.98
KEPT_BAR = 0.95


def test_the_set_is_annotated_consistently():
    cases = load()
    assert len(cases) >= 150
    assert {c["lang"] for c in cases} == {"de", "en"}
    for case in cases:
        for entry in case["spans"] + case["lookalikes"]:
            assert case["text"][entry["start"]:entry["end"]] == entry["value"], case["id"]
    kinds = {s["kind"] for c in cases for s in c["spans"]}
    assert kinds == set(KINDS)
    families = {look["family"] for c in cases for look in c["lookalikes"]}
    assert {"weekday", "month", "flower", "food", "word", "shop", "season"} <= families


def test_recall_per_kind_and_look_alikes_kept_reach_the_bar(capsys):
    result = score(load())
    with capsys.disabled():  # the figures show in every run, not only on failure
        print("\nprivacy evaluation set:\n" + result.report())
    below = [kind for kind in result.total if result.recall(kind) < RECALL_BAR]
    assert not below and result.kept_ratio >= KEPT_BAR, result.report()
    assert result.recall(REGISTERED) == 1.0, result.report()
