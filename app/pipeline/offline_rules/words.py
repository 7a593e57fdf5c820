"""Building blocks of the offline rules.

Every rule runs on user text of up to `max_message_chars` (20 000): quantifiers are bounded,
and whitespace runs and word-internal matches are entered only at their start, so that each
rule stays linear in the text (tests/pipeline/test_offline_rules_linear.py: worst cases).
"""

from __future__ import annotations

import re

WORD = r"[\wÄÖÜäöüß]"
GAP = 200  # the most characters a rule looks across between two cue words
WORD_START = rf"(?<!{WORD})"
STEM = rf"{WORD}{{0,40}}"  # the head of a compound noun ("Einkaufs" in "Einkaufsliste")
# A leading article or filler: "die Milch" → "Milch", "noch ein Brot" → "Brot".
ARTICLE = re.compile(
    r"^(?:noch\s+|bitte\s+)?(?:ein|eine|einen|die|der|das|den|the|a|an|some)"
    r"\s+",
    re.I,
)
