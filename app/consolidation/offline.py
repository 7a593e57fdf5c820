"""The offline model plays along with long-term memory (design §3a, §7 `offline`).

Lexicon rules, German and English, over the user's own sentences:

=================================================  =============
cue                                                kind
=================================================  =============
"heißt", "wohnt in", "is called", "lives in"       person
"arbeite bei", "ich bin allergisch gegen",         fact
"work at", "allergic to"
"ich mag", "ich liebe", "I like", "I love"         preference
"Geburtstag", "birthday"                           event
"morgen", "nächste Woche", "tomorrow", "next week"  plan
=================================================  =============

- `consolidation`: each cue sentence becomes a memory in the user's own words (so it passes
  the support check); a sentence equal to a known memory refreshes it; a correction
  ("nicht Leipzig, sondern Dresden", "nicht Leipzig, Dresden", "not Leeds but York") supersedes
  the known memory that names X, with X replaced by Y.
- `salience`: a block with a cue sentence is important (at the promotion threshold and
  above) and its cue sentences are the segments.
- `responder`: a question whose content words meet a known memory is answered with it
  ("Du hast mir erzählt: …").
"""

from __future__ import annotations

import re
from typing import Any

from app.llm.offline import text as tx
from app.llm.offline.handlers import Answers, OfflineRequest
from app.memory.words import content_words, same_word
from app.pipeline import offline
from app.pipeline.offline import Frame

CUE_IMPORTANCE = 0.8

CUES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), kind)
    for p, kind in (
        (
            r"\bheißt\b|\bheisst\b|\bwohnt in\b|\bwohne in\b|\bis called\b|\bnamed\b|\blives in\b|"
            r"\bi live in\b",
            "person",
        ),
        (
            r"\barbeite (?:bei|als)\b|\bich bin allergisch gegen\b|\bwork (?:at|for|as)\b|"
            r"\ballergic to\b",
            "fact",
        ),
        (r"\bich mag\b|\bich liebe\b|\bmag ich\b|\bi like\b|\bi love\b", "preference"),
        (r"geburtstag|\bbirthday\b", "event"),
        (
            r"\bmorgen\b|\bübermorgen\b|\bnächste woche\b|\bnaechste woche\b|\btomorrow\b|"
            r"\bnext week\b",
            "plan",
        ),
    )
)
# A correction: "nicht Leipzig, sondern Dresden" / "not Leeds but York", or two names
# side by side ("nicht Leipzig, Dresden"; capitalized, so "nicht schlimm, danke" is none).
_PREP = r"(?:(?:in|bei|mit|at|with) )?"
CORRECTION = re.compile(
    rf"\b(?:[Nn]icht|[Nn]ot) {_PREP}([\wÄÖÜäöüß-]+),? (?:sondern|but) {_PREP}([\wÄÖÜäöüß-]+)|"
    rf"\b(?:[Nn]icht|[Nn]ot) {_PREP}([A-ZÄÖÜ][\wÄÖÜäöüß-]*), ?([A-ZÄÖÜ][\wÄÖÜäöüß-]*)"
)
KNOWN_LINE = re.compile(r"^\[([0-9a-f]+)\]\s+\(([^)]*)\)\s+(.*)$")
QUESTION = re.compile(
    r"\?|^(?:wie|was|wo|wer|wann|weißt|weisst|kennst|erinnerst|what|where|"
    r"who|when|do you (?:know|remember))\b",
    re.I,
)
TOLD = {"de": "Du hast mir erzählt: „{text}“", "en": "You told me: “{text}”"}


def cue_kind(sentence: str) -> str | None:
    for pattern, kind in CUES:
        if pattern.search(sentence):
            return kind
    return None


def cue_sentences(text: str) -> list[tuple[str, str]]:
    """(sentence, kind) for every sentence of the user's words that carries a cue and is not
    a question."""
    found = []
    for sentence in tx.sentences(text):
        kind = cue_kind(sentence)
        if kind is not None and not sentence.rstrip().endswith("?"):
            found.append((sentence.strip(), kind))
    return found


def known_lines(block: str) -> list[tuple[str, str]]:
    """(memory_id, text) of the consolidation frame's known memories."""
    found = []
    for line in block.split("\n"):
        match = KNOWN_LINE.match(line.strip())
        if match:
            found.append((match.group(1), match.group(3).strip()))
    return found


def _same(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()).rstrip(".!? ") == " ".join(b.casefold().split()).rstrip(
        ".!? "
    )


def _correction(said: str, known: list[tuple[str, str]]) -> dict[str, Any] | None:
    match = CORRECTION.search(said)
    if match is None:
        return None
    old = match.group(1) or match.group(3)
    new = match.group(2) or match.group(4)
    for memory_id, text in known:
        words = re.findall(r"[\wÄÖÜäöüß-]+", text)
        hit = next((w for w in words if same_word(w.casefold(), old.casefold())), None)
        if hit is not None:
            corrected = re.sub(rf"\b{re.escape(hit)}\b", new, text)
            return {"action": "supersede", "memory_id": memory_id, "text": corrected, "kind": ""}
    return None


def consolidation(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    said = frame.get("said")
    known = known_lines(frame.get("known"))
    memories: list[dict[str, Any]] = []
    correction = _correction(said, known)
    if correction is not None:
        memories.append(correction)
    for sentence, kind in cue_sentences(said):
        if correction is not None and CORRECTION.search(sentence):
            continue
        same = next((memory_id for memory_id, text in known if _same(text, sentence)), None)
        if same is not None:
            memories.append(
                {"action": "refresh", "memory_id": same, "text": sentence, "kind": kind}
            )
        else:
            memories.append({"action": "remember", "text": sentence, "kind": kind})
    return {"memories": memories}


def salience(request: OfflineRequest) -> dict[str, Any]:
    answer = dict(offline.salience(request))
    words = Frame(request).last_user_words()
    cues = cue_sentences(words)
    if cues or CORRECTION.search(words):
        answer["importance"] = max(float(answer.get("importance", 0.0)), CUE_IMPORTANCE)
        answer["segments"] = [s for s, _ in cues] or [words.strip()]
    return answer


def responder(request: OfflineRequest) -> str:
    frame = Frame(request)
    words = frame.last_user_words()
    known = [line.split(") ", 1)[-1] for line in frame.get("known").split("\n") if line.strip()]
    if known and QUESTION.search(words.strip()) and not frame.get("actions"):
        asked = set(content_words(words))
        for text in known:
            if any(same_word(a, w) for a in asked for w in content_words(text)):
                return TOLD[frame.language].format(text=text)
    return str(offline.responder(request))


PURPOSE_HANDLERS: Answers = {
    "consolidation": consolidation,
    "salience": salience,
    "responder": responder,
}
