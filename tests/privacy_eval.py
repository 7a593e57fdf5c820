"""Scoring the privacy detectors against an annotated set (`tests/data/privacy_cases.jsonl`),
used by `tests/llm/privacy/test_eval.py` and `bench/privacy.py`.

A line: `{"id", "lang", "people": [{"name", "aliases"}], "text", "spans": [{"start", "end",
"value", "kind"}], "lookalikes": [{"start", "end", "value", "family"}]}`. A span is found
when one detected span of its kind covers it; a look-alike is kept when no detected span
touches it. The PERSON spans of registered people (a word of the span is a word of a
registered name or alias, in any spelling: "Juergen" of "Jürgen", "Anna-Lena" of "Anna",
"CarlaMustermann" of "Carla Mustermann") are scored once more on their own, as
`REGISTERED`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.llm.privacy import NameIndex, detect
from app.llm.privacy.normalise import normalise
from tests import DATA

CASES = DATA / "privacy_cases.jsonl"
REGISTERED = "REGISTERED"  # the registered people's PERSON spans, scored on their own
_WORDS = re.compile(r"[\s\-_.@#/]+|(?<=[a-zß-ÿ])(?=[A-ZÀ-Þ])")
_HONORIFICS = frozenset({"herr", "frau", "dr", "prof", "onkel", "tante", "oma", "opa", "mr",
                         "mrs", "ms", "von", "van", "de", "der"})


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


def _folded_words(text: str) -> set[str]:
    """The words of a name, folded so that every spelling of it is the same: no accents,
    no umlauts (`ae` as `a`), `ß` and `ss` as `s`, lower case."""
    words = set()
    for word in _WORDS.split(normalise(text)):
        word = "".join(c for c in unicodedata.normalize("NFKD", word.casefold())
                       if not unicodedata.combining(c))
        for pair, single in (("ae", "a"), ("oe", "o"), ("ue", "u"), ("ss", "s")):
            word = word.replace(pair, single)
        word = word.strip("'’").removesuffix("'s").removesuffix("’s")
        if len(word) >= 2 and word not in _HONORIFICS:
            words.add(word)
    return words


def registered(value: str, names: list[str]) -> bool:
    """Is a PERSON span one of a registered person's (a word of it is one of theirs)?"""
    theirs = set().union(*(_folded_words(n) for n in names)) if names else set()
    ours = _folded_words(value)
    return bool(ours & theirs or {w.removesuffix("s") for w in ours} & theirs)


def score(cases: list[dict[str, Any]]) -> Score:
    result = Score()
    for case in cases:
        names = [n for p in case["people"] for n in [p["name"], *p["aliases"]]]
        found = detect(case["text"], NameIndex(names))
        for gold in case["spans"]:
            kinds = [gold["kind"]]
            if gold["kind"] == "PERSON" and registered(gold["value"], names):
                kinds.append(REGISTERED)
            hit = any(s.kind == gold["kind"] and s.start <= gold["start"] and s.end >= gold["end"]
                      for s in found)
            for kind in kinds:
                result.total[kind] += 1
                result.found[kind] += hit
            if not hit:
                result.misses.append(f"{case['id']} {gold['kind']} {gold['value']!r}")
        for look in case["lookalikes"]:
            result.lookalikes[look["family"]] += 1
            if all(s.end <= look["start"] or s.start >= look["end"] for s in found):
                result.kept[look["family"]] += 1
            else:
                result.misses.append(f"{case['id']} look-alike {look['value']!r} masked")
    return result
