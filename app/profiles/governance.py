"""What the two profiles share (seed 004 §12): the writing profile (`app.profiles.writing`) and
the interaction profile (`app.profiles.interaction`) are governed by the same rules and travel in one
family of JSON documents.

- governance: `learning` applies an observation the user did not decide themselves,
  `advising` (the default) only suggests, `frozen` takes nothing;
- origins: `manual` (the user wrote it), `accepted` (the user accepted a suggestion or a
  proposed change) — both the user's own, which no automatic path overwrites — and
  `automatic` (governance `learning` applied it);
- the name rule of a facet and of an interaction preference, and `derive_key`, the one
  place a free-text name ("Tagebuch", "Sätze – kurz") becomes its stable snake_case key;
- portability: the documents' `format_version` and the error a document that cannot be
  imported raises, with the checks both readers make.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection
from typing import Literal

from app.core.refusal import RefusedKind

Governance = Literal["learning", "advising", "frozen"]
DEFAULT_GOVERNANCE: Governance = "advising"
Origin = Literal["manual", "accepted", "automatic"]
USER_ORIGINS = frozenset(("manual", "accepted"))
NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")  # a facet's or an interaction preference's name

MAX_KEY_CHARS = 64  # what NAME allows
MAX_LABEL_CHARS = 80  # a free-text name as the user wrote it
# German letters whose plain-letter spelling is two letters (NFKD would drop the umlaut's dots
# and keep "a": "Männer" must not become "manner").
_SPELLED = str.maketrans(
    {
        "ä": "ae",
        "ö": "oe",
        "ü": "ue",
        "ß": "ss",
        "Ä": "ae",
        "Ö": "oe",
        "Ü": "ue",
        "ẞ": "ss",
        "æ": "ae",
        "œ": "oe",
        "ø": "o",
        "đ": "d",
        "ł": "l",
        "þ": "th",
    }
)
_NOT_KEY = re.compile(r"[^a-z0-9]+")


class InvalidName(ValueError):
    """A name no key can be derived from (empty, or too long)."""


def clean_label(raw: str) -> str:
    """A free-text name as it is kept and shown: inner whitespace folded, 1 to
    `MAX_LABEL_CHARS` characters; raises `InvalidName` otherwise."""
    label = " ".join(raw.split())
    if not label:
        raise InvalidName("a name needs at least one letter or digit")
    if len(label) > MAX_LABEL_CHARS:
        raise InvalidName(f"a name has at most {MAX_LABEL_CHARS} characters; got {len(label)}")
    if not any(c.isalnum() for c in label):
        raise InvalidName(f"{label!r} holds no letter or digit")
    return label


def base_key(label: str) -> str:
    """The snake_case key a name stands for, without regard to keys already taken.

    Deterministic and idempotent: a valid key is its own key ("autobiographical_journal").
    Umlauts and ß are spelled out (ä → ae), other accents dropped (é → e), every run of
    spaces, hyphens and other signs becomes one `_`. A name with no Latin letter or digit
    at all ("日記") gets `k_` and a short hash of its folded spelling: still stable."""
    label = clean_label(label)
    if NAME.fullmatch(label):
        return label
    folded = unicodedata.normalize("NFKD", label.translate(_SPELLED).casefold().translate(_SPELLED))
    ascii_only = folded.encode("ascii", "ignore").decode()
    key = _NOT_KEY.sub("_", ascii_only).strip("_")
    if not key:
        digest = hashlib.sha256(" ".join(label.casefold().split()).encode()).hexdigest()
        return f"k_{digest[:10]}"
    if not key[0].isalpha():
        key = f"k_{key}"
    return key[:MAX_KEY_CHARS].rstrip("_")


def derive_key(label: str, taken: Collection[str] = ()) -> str:
    """The stable key of a new facet or trait named `label`: `base_key`, and when another
    one already has that key (a collision: "Tage-buch" and "Tage buch"), the first free
    `_2`, `_3`, … suffix. Raises `InvalidName` for a name no key can come from."""
    key = base_key(label)
    if key not in taken:
        return key
    for number in range(2, len(taken) + 3):
        suffix = f"_{number}"
        candidate = key[: MAX_KEY_CHARS - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise AssertionError("unreachable: len(taken) + 1 suffixes cannot all be taken")


FORMAT_VERSION = 1  # `kansho.writing_profile`, `kansho.interaction_profile`, `kansho.profiles`


class PortableError(RefusedKind):
    """The document cannot be imported (400 `invalid_document`); nothing is written."""

    STATUS, CODE = 400, "invalid_document"


def check_name(raw: str, noun: str) -> None:
    if not NAME.fullmatch(raw):
        raise PortableError(f"{noun} name {raw[:80]!r} is not valid")


def check_length(text: str, limit: int, noun: str) -> None:
    if len(text) > limit:
        raise PortableError(f"{noun} has {len(text)} characters; at most {limit}")
