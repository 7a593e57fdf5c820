"""The local triggers that make a saved entry a review candidate (seed 004 §13): cheap
measures, no model. They choose evidence; they never write a trait.

When the user saves an entry of their own (a confirmed profile, not `frozen`), it becomes a
candidate when
- it is a **strong edit** of a generated draft (`edit_share` at least
  `profile_strong_edit_share`);
- it shows a **heuristic deviation**: its mean sentence length or mean word length lies
  `profile_deviation_share` or more away from the median of the user's usual writing (at
  least `MIN_BASELINE` earlier entries of theirs);
- it comes from **periodic readiness**: no candidate yet, the last one at least
  `profile_evidence_period` ago, or `profile_evidence_volume` of the user's saves since.
Otherwise the save leaves no candidate (the page's explicit review still reads every entry).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_BASELINE = 3  # earlier texts of the user before a deviation can be judged
BASELINE = 20  # the user's newest texts that say how they usually write
_SENTENCE = re.compile(r"[^.!?…]+[.!?…]*")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Measures:
    sentence_words: float  # mean words per sentence
    word_chars: float  # mean letters per word

    def as_dict(self) -> dict[str, float]:
        return {"sentence_words": self.sentence_words, "word_chars": self.word_chars}


def measure(text: str) -> Measures:
    sentences = [s for s in _SENTENCE.findall(text) if _WORD.search(s)]
    words = _WORD.findall(text)
    if not words:
        return Measures(0.0, 0.0)
    return Measures(
        round(len(words) / max(1, len(sentences)), 2),
        round(sum(len(w) for w in words) / len(words), 2),
    )


def deviation(current: Measures, baseline: Sequence[Measures], share: float) -> dict[str, float]:
    """The measures of `current` that lie `share` or more (relative) from the baseline's
    median, with how far; {} while the baseline is shorter than `MIN_BASELINE`."""
    if len(baseline) < MIN_BASELINE:
        return {}
    found: dict[str, float] = {}
    for name, value in current.as_dict().items():
        usual = statistics.median(getattr(m, name) for m in baseline)
        if usual <= 0:
            continue
        off = abs(value - usual) / usual
        if off >= share:
            found[name] = round(off, 2)
    return found


def trigger(
    *,
    edit_share: float | None,
    strong_share: float,
    deviations: dict[str, float],
    last_candidate_at: float | None,
    saves_since: int,
    now: float,
    period: float,
    volume: int,
) -> str | None:
    """The signal a saved entry is a candidate by, or None (see the module's docstring;
    the first that holds, in that order)."""
    if edit_share is not None and edit_share >= strong_share:
        return "strong_edit"
    if deviations:
        return "deviation"
    if last_candidate_at is None or now - last_candidate_at >= period or saves_since + 1 >= volume:
        return "periodic"
    return None
