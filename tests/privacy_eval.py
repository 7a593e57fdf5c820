"""Scoring the privacy detectors against an annotated set (`tests/data/privacy_cases.jsonl`),
used by `tests/llm/privacy/test_eval.py` and `bench/privacy.py`.

A line: `{"id", "lang", "people": [{"name", "aliases"}], "text", "spans": [{"start", "end",
"value", "kind"}], "lookalikes": [{"start", "end", "value", "family"}]}`. A span is found
when one detected span of its kind covers it; a look-alike is kept when no detected span
touches it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.llm.privacy import NameIndex, detect
from tests import DATA

CASES = DATA / "privacy_cases.jsonl"


@dataclass
class Score:
    found: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    kept: Counter[str] = field(default_factory=Counter)
    lookalikes: Counter[str] = field(default_factory=Counter)
    misses: list[str] = field(default_factory=list)

    def recall(self, kind: str) -> float:
        return self.found[kind] / self.total[kind]

    @property
    def kept_ratio(self) -> float:
        return sum(self.kept.values()) / sum(self.lookalikes.values())

    def report(self) -> str:
        lines = [f"{kind:<10} recall {self.recall(kind):.3f} ({self.found[kind]}/"
                 f"{self.total[kind]})" for kind in sorted(self.total)]
        lines += [f"look-alike {family:<8} kept {self.kept[family]}/{self.lookalikes[family]}"
                  for family in sorted(self.lookalikes)]
        lines.append(f"look-alikes kept {self.kept_ratio:.3f}")
        return "\n".join(lines + [f"miss: {m}" for m in self.misses])


def load(path: Path = CASES) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def score(cases: list[dict[str, Any]]) -> Score:
    result = Score()
    for case in cases:
        names = [n for p in case["people"] for n in [p["name"], *p["aliases"]]]
        found = detect(case["text"], NameIndex(names))
        for gold in case["spans"]:
            result.total[gold["kind"]] += 1
            if any(s.kind == gold["kind"] and s.start <= gold["start"] and s.end >= gold["end"]
                   for s in found):
                result.found[gold["kind"]] += 1
            else:
                result.misses.append(f"{case['id']} {gold['kind']} {gold['value']!r}")
        for look in case["lookalikes"]:
            result.lookalikes[look["family"]] += 1
            if all(s.end <= look["start"] or s.start >= look["end"] for s in found):
                result.kept[look["family"]] += 1
            else:
                result.misses.append(f"{case['id']} look-alike {look['value']!r} masked")
    return result
