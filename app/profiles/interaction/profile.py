"""The interaction profile's rules (seed 004 §12): how the user likes the character to answer.

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

import msgspec

from app.core.i18n import texts
from app.profiles.governance import DEFAULT_GOVERNANCE, USER_ORIGINS, Governance, Origin

# The product defaults, in order; their wording is in the server's texts (`app.core.i18n`).
DEFAULT_KEYS = ("answer_length", "follow_up", "listening")


class Pref(msgspec.Struct, frozen=True):
    """A preference of the user's: its text and where it came from (field order: the
    stored and answered key order)."""

    value: str
    origin: Origin
    updated_at: float = 0.0


class Suggestion(msgspec.Struct, frozen=True):
    """An observed preference waiting for the user's decision (`advising`)."""

    suggestion_id: str
    key: str
    value: str
    note: str
    created_at: float


class InteractionProfile(msgspec.Struct):
    """The stored profile (a row of `interaction_profiles`); a write changes it in place
    (`InteractionStore.edit`)."""

    governance: Governance = DEFAULT_GOVERNANCE
    prefs: dict[str, Pref] = {}
    suggestions: list[Suggestion] = []


class DefaultPref(msgspec.Struct, frozen=True):
    """A product default as the page shows it, with its label."""

    key: str
    value: str
    label: str


class InteractionView(msgspec.Struct, frozen=True):
    """The profile as the page shows it (`GET /api/profile/interaction`; field order: the
    answer's key order): the profile's fields, the defaults, the hint the responder gets,
    and after an observation what became of it (`observe`)."""

    governance: Governance
    prefs: dict[str, Pref]
    suggestions: list[Suggestion]
    defaults: list[DefaultPref]
    hint: str
    outcome: str | msgspec.UnsetType = msgspec.UNSET


def hint(profile: InteractionProfile, language: str) -> str:
    """The `interaction_hint` text: each default (labelled) unless the user's preference for
    the same key replaces it, then the user's other preferences."""
    words, defaults = texts("interaction", language), texts("interaction_defaults", language)
    prefs = profile.prefs
    lines = [words["heading"]]
    for key in DEFAULT_KEYS:
        own = prefs.get(key)
        lines.append(f"- {own.value}" if own else f"- {defaults[key]} ({words['label']})")
    lines += [f"- {pref.value}" for key, pref in prefs.items() if key not in DEFAULT_KEYS]
    return "\n".join(lines)


def describe(profile: InteractionProfile, language: str) -> InteractionView:
    label = texts("interaction", language)["label"]
    defaults = texts("interaction_defaults", language)
    return InteractionView(
        governance=profile.governance,
        prefs=profile.prefs,
        suggestions=profile.suggestions,
        defaults=[DefaultPref(key, defaults[key], label) for key in DEFAULT_KEYS],
        hint=hint(profile, language),
    )


def set_pref(profile: InteractionProfile, key: str, value: str, origin: Origin) -> None:
    profile.prefs[key] = Pref(value, origin, time.time())


def observe(profile: InteractionProfile, key: str, value: str, note: str = "") -> str:
    """An observed preference under the profile's governance; returns what happened:
    `ignored`, `suggested` or `applied`."""
    governance = profile.governance
    if governance == "frozen":
        return "ignored"
    current = profile.prefs.get(key)
    if governance == "learning" and (current is None or current.origin not in USER_ORIGINS):
        set_pref(profile, key, value, "automatic")
        return "applied"
    profile.suggestions.append(
        Suggestion(
            suggestion_id=f"isug_{uuid.uuid4().hex[:16]}",
            key=key,
            value=value,
            note=note,
            created_at=time.time(),
        )
    )
    return "suggested"


def decide(profile: InteractionProfile, suggestion_id: str, accept: bool) -> bool:
    """Accept (as the user's) or drop a suggestion; False when there is no such one."""
    found = next((s for s in profile.suggestions if s.suggestion_id == suggestion_id), None)
    if found is None:
        return False
    profile.suggestions.remove(found)
    if accept:
        set_pref(profile, found.key, found.value, "accepted")
    return True
