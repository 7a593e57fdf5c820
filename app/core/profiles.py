"""What the two profiles share (seed 004 §12): the writing profile (`app.journal.profile`) and
the interaction profile (`app.interaction`) are governed by the same rules and travel in one
family of JSON documents.

- governance: `learning` applies an observation the user did not decide themselves,
  `advising` (the default) only suggests, `frozen` takes nothing;
- origins: `manual` (the user wrote it), `accepted` (the user accepted a suggestion or a
  proposed change) — both the user's own, which no automatic path overwrites — and
  `automatic` (governance `learning` applied it);
- the name rule of a facet and of an interaction preference;
- portability: the documents' `format_version` and the error a document that cannot be
  imported raises, with the checks both readers make.
"""

from __future__ import annotations

import re
from typing import Literal

Governance = Literal["learning", "advising", "frozen"]
DEFAULT_GOVERNANCE = "advising"
Origin = Literal["manual", "accepted", "automatic"]
USER_ORIGINS = frozenset(("manual", "accepted"))
NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")  # a facet's or an interaction preference's name

FORMAT_VERSION = 1  # `kansho.writing_profile`, `kansho.interaction_profile`, `kansho.profiles`


class PortableError(Exception):
    """The document cannot be imported (400); nothing is written."""


def check_name(raw: str, noun: str) -> None:
    if not NAME.fullmatch(raw):
        raise PortableError(f"{noun} name {raw[:80]!r} is not valid")


def check_length(text: str, limit: int, noun: str) -> None:
    if len(text) > limit:
        raise PortableError(f"{noun} has {len(text)} characters; at most {limit}")
