"""The interaction profile as a JSON document (seed 004 §12): `kansho.interaction_profile`,
`format_version` 1 — the governance and the preferences; suggestions stay behind.

An import replaces the preferences and the governance explicitly (the user chose the file).
The document inside the combined `kansho.profiles` is the same; that one is read and
written by `app.profiles.writing.portability`.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import msgspec

from app.profiles.governance import (
    FORMAT_VERSION,
    Governance,
    Origin,
    check_length,
    check_name,
)
from app.profiles.interaction.profile import InteractionProfile, Pref

KIND = "kansho.interaction_profile"


class PrefDoc(msgspec.Struct, forbid_unknown_fields=True):
    value: str
    origin: Origin = "manual"


class InteractionDoc(msgspec.Struct, forbid_unknown_fields=True):
    kind: Literal["kansho.interaction_profile"]
    format_version: Literal[1]
    governance: Governance = "advising"
    prefs: dict[str, PrefDoc] = {}
    exported_at: float | None = None


def export(current: InteractionProfile) -> dict[str, Any]:
    return {
        "kind": KIND,
        "format_version": FORMAT_VERSION,
        "exported_at": time.time(),
        "governance": current.governance,
        "prefs": {k: {"value": p.value, "origin": p.origin} for k, p in current.prefs.items()},
    }


def check(doc: InteractionDoc, max_value_chars: int) -> None:
    """Raises `PortableError` for a preference with a bad name or an over-long value."""
    for key, pref in doc.prefs.items():
        check_name(key, "preference")
        check_length(pref.value, max_value_chars, f"preference {key}")


def imported(doc: InteractionDoc) -> InteractionProfile:
    """The profile a checked document replaces the stored one with (no suggestions)."""
    now = time.time()
    return InteractionProfile(
        governance=doc.governance,
        prefs={k: Pref(p.value, p.origin, now) for k, p in doc.prefs.items()},
    )
