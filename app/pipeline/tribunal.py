"""The tribunal: validators over an answer before it goes out, and the corrector's outcome
(design §6 "Tribunal outcome").

Validators (each a small function, each finding named by a code):

- hard: `empty` (no text), `speaker_label` (a speaker line such as `NOVA:` / `[3] USER (…):`
  or a marker of the history's speaker bracket such as "(von sich aus)" or "(…, ERLEDIGT)"
  inside the text — the label lives in the speaker line, never in the character's mouth),
  `prompt_leak` (a block title of the prompt frame, or a whole sentence of the instructions,
  repeated in the answer);
- soft: `repeat` (the previous answer again, or the new one starting with all of it — the
  seed's thinker-retry defect), `language` (not the language the user writes in).

Hard findings go to the corrector once. If the rewrite still has a hard finding, a leaked
label is removed deterministically; an answer that is then empty or still leaks fails the
turn (`tribunal_rejected`). Soft findings are logged and the answer is delivered.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from app.llm.offline.text import language as detect_language
from app.llm.offline.text import words
from app.memory.render import LABELS
from app.pipeline.prompts import BLOCK_PREFIX, BLOCKS

HARD = frozenset({"empty", "speaker_label", "prompt_leak"})
LEAK_MIN_CHARS = 40  # a repeated instruction sentence shorter than this is a phrase
REPEAT_SIMILARITY = 0.9  # difflib ratio from which a new answer counts as the old one
REPEAT_MIN_CHARS = 20  # "starts with the previous answer" needs a real previous answer
LANGUAGE_MIN_WORDS = 4  # below this the language of a text is a guess
SIMILARITY_MAX_CHARS = 4000  # difflib on longer texts costs more than it tells


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    detail: str

    @property
    def hard(self) -> bool:
        return self.code in HARD


def _occasion_words() -> list[str]:
    return sorted({word for labels in LABELS.values() for word in (labels.impulse, labels.unknown)})


def _marker_words() -> list[str]:
    return sorted({word for labels in LABELS.values() for word in (labels.done, labels.failed)})


def _user_words() -> list[str]:
    return sorted({labels.user for labels in LABELS.values()})


def speaker_prefix(character_name: str) -> re.Pattern[str]:
    """A speaker line's head at the start of a line: `[3] NOVA (freude):`, `User:`, `Nova:`."""
    names = "|".join(re.escape(n) for n in (*_user_words(), character_name))
    return re.compile(
        rf"^[ \t]*(?:\[\d+\][ \t]*)?(?:{names})(?:[ \t]*\([^)\n]*\))?[ \t]*:[ \t]*",
        re.IGNORECASE | re.MULTILINE,
    )


_OCCASION = re.compile(
    r"(?:(?<![ \t])[ \t]+)?\([^()\n]{0,200}?\b(?:"
    + "|".join(re.escape(w) for w in _occasion_words())
    + r")\b[^()\n]{0,200}\)",
    re.IGNORECASE,
)
_MARKER = re.compile(
    r"(?:(?<![ \t])[ \t]+)?[(\[][^()\[\]\n]{0,200}?\b(?:"
    + "|".join(re.escape(w) for w in _marker_words())
    + r")\b[^()\[\]\n]{0,200}[)\]]"
)


def _titles() -> list[str]:
    titles: set[str] = set()
    for blocks in BLOCKS.values():
        titles.update(getattr(blocks, name) for name in blocks.__dataclass_fields__)
    return sorted(titles)


_FRAME_TITLE = re.compile(
    r"(?m)^[ \t]*"
    + re.escape(BLOCK_PREFIX.strip())
    + r"[ \t]*(?:"
    + "|".join(re.escape(t) for t in _titles())
    + r")\b"
)


def _normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def instruction_sentences(instructions: Iterable[str]) -> list[str]:
    """The sentences of the instructions long enough that repeating one is a leak."""
    return list(_sentences(tuple(instructions)))


@functools.lru_cache(maxsize=64)
def _sentences(instructions: tuple[str, ...]) -> tuple[str, ...]:
    # Cached: the same rendered instructions come back on every run of a character.
    found = []
    for text in instructions:
        for part in re.split(r"(?<=[.!?:])\s+|\n\s*\n|\n(?=\s*[-•])", text):
            sentence = _normalize(part.strip(" -•\t")).rstrip(".:;,!?")
            if len(sentence) >= LEAK_MIN_CHARS:
                found.append(sentence)
    return tuple(found)


def has_label(text: str, character_name: str) -> bool:
    return bool(
        speaker_prefix(character_name).search(text)
        or _OCCASION.search(text)
        or _MARKER.search(text)
    )


def strip_labels(text: str, character_name: str) -> str:
    """The text with every leaked speaker head and bracket marker removed (deterministic)."""
    cleaned = speaker_prefix(character_name).sub("", text)
    cleaned = _OCCASION.sub("", cleaned)
    cleaned = _MARKER.sub("", cleaned)
    return "\n".join(line.rstrip() for line in cleaned.strip().split("\n"))


def leaks(text: str, instruction_parts: list[str]) -> str | None:
    """What of the prompt the text repeats, or None."""
    title = _FRAME_TITLE.search(text)
    if title:
        return f"frame block title {title.group(0).strip()!r}"
    body = _normalize(text)
    for sentence in instruction_parts:
        if sentence in body:
            return f"instruction sentence {sentence!r}"
    return None


def repeats(text: str, previous: str) -> bool:
    now, before = _normalize(text), _normalize(previous)
    if not now or not before:
        return False
    if now == before:
        return True
    if len(before) >= REPEAT_MIN_CHARS and now.startswith(before):
        return True
    if max(len(now), len(before)) > SIMILARITY_MAX_CHARS:
        return False
    return difflib.SequenceMatcher(None, now, before).ratio() >= REPEAT_SIMILARITY


def validate(
    text: str,
    *,
    character_name: str,
    previous: str,
    expected_language: str,
    instruction_parts: list[str],
) -> list[Finding]:
    if not text.strip():
        return [Finding("empty", "the answer is empty")]
    findings: list[Finding] = []
    if has_label(text, character_name):
        findings.append(Finding("speaker_label", "a speaker label or marker is in the text"))
    leak = leaks(text, instruction_parts)
    if leak:
        findings.append(Finding("prompt_leak", leak))
    if repeats(text, previous):
        findings.append(Finding("repeat", "the answer repeats the previous answer"))
    wrong = wrong_language(text, expected_language)
    if wrong:
        findings.append(Finding("language", wrong))
    return findings


def wrong_language(text: str, expected: str) -> str | None:
    expected = expected.strip().lower().replace("_", "-").split("-", 1)[0]
    if expected not in ("de", "en") or len(words(text)) < LANGUAGE_MIN_WORDS:
        return None
    found = detect_language(text)
    return None if found == expected else f"written in {found}, expected {expected}"
