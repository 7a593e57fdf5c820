"""The interaction profile (seed 004 §12): how the user likes the character to answer.

Separate from the writing profile (that one shapes journal text, not the dialogue) and
`advising` by default. Product defaults — answer length, one follow-up impulse at most,
listening while the user tells a story — are labelled as defaults and each can be overridden
by the user's own preference. Together they fill the responder prompt's `interaction_hint`.

Observations are the only automatic path and are governed: `frozen` ignores them, `advising`
queues a suggestion, `learning` applies one unless the user set that preference themselves
(then it is a suggestion too). Nothing observes silence: not contradicting something is never
a signal, so no code calls `observe` from a turn.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from app.journal.profile.model import USER_ORIGINS


@dataclass(frozen=True, slots=True)
class Default:
    key: str
    text: dict[str, str]  # language → the default's wording


DEFAULTS: tuple[Default, ...] = (
    Default("answer_length", {
        "en": "Keep answers short: two to four sentences unless the person asks for more.",
        "de": "Antworte kurz: zwei bis vier Sätze, außer der Mensch möchte mehr."}),
    Default("follow_up", {
        "en": "At most one follow-up question or impulse per answer.",
        "de": "Höchstens eine Anschlussfrage oder ein Impuls pro Antwort."}),
    Default("listening", {
        "en": "While the person tells a story, listen: reflect briefly, give no advice and "
              "do not change the topic.",
        "de": "Während der Mensch erzählt, hör zu: kurz spiegeln, keine Ratschläge, kein "
              "Themenwechsel."}),
)
DEFAULT_KEYS = tuple(d.key for d in DEFAULTS)
HEADING = {"en": "How this person likes to be answered:",
           "de": "Wie dieser Mensch angesprochen werden möchte:"}
LABEL = {"en": "product default", "de": "Voreinstellung"}


def _language(language: str) -> str:
    return "de" if language.lower().startswith("de") else "en"


def hint(profile: dict[str, Any], language: str) -> str:
    """The `interaction_hint` text: each default (labelled) unless the user's preference for
    the same key replaces it, then the user's other preferences."""
    lang = _language(language)
    prefs: dict[str, dict[str, Any]] = profile.get("prefs", {})
    lines = [HEADING[lang]]
    for default in DEFAULTS:
        own = prefs.get(default.key)
        lines.append(f"- {own['value']}" if own else
                     f"- {default.text[lang]} ({LABEL[lang]})")
    lines += [f"- {pref['value']}" for key, pref in prefs.items() if key not in DEFAULT_KEYS]
    return "\n".join(lines)


def describe(profile: dict[str, Any], language: str) -> dict[str, Any]:
    lang = _language(language)
    return {**profile, "defaults": [{"key": d.key, "value": d.text[lang], "label": LABEL[lang]}
                                    for d in DEFAULTS], "hint": hint(profile, language)}


def set_pref(profile: dict[str, Any], key: str, value: str, origin: str) -> None:
    profile["prefs"][key] = {"value": value, "origin": origin, "updated_at": time.time()}


def observe(profile: dict[str, Any], key: str, value: str, note: str = "") -> str:
    """An observed preference under the profile's governance; returns what happened:
    `ignored`, `suggested` or `applied`."""
    governance = profile["governance"]
    if governance == "frozen":
        return "ignored"
    current = profile["prefs"].get(key)
    if governance == "learning" and (current is None or current["origin"] not in USER_ORIGINS):
        set_pref(profile, key, value, "automatic")
        return "applied"
    profile["suggestions"].append({"suggestion_id": f"isug_{uuid.uuid4().hex[:16]}",
                                   "key": key, "value": value, "note": note,
                                   "created_at": time.time()})
    return "suggested"


def decide(profile: dict[str, Any], suggestion_id: str, accept: bool) -> bool:
    """Accept (as the user's) or drop a suggestion; False when there is no such one."""
    found = next((s for s in profile["suggestions"] if s["suggestion_id"] == suggestion_id),
                 None)
    if found is None:
        return False
    profile["suggestions"].remove(found)
    if accept:
        set_pref(profile, found["key"], found["value"], "accepted")
    return True
