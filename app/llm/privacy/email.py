"""E-mail addresses (no library needed: the shape is the whole test)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from app.llm.privacy.spans import Span

# The domain may hold any letters ("müller-bäckerei.de": internationalised domains).
_EMAIL = re.compile(r"[\w.%+-]+@[^\W_](?:[\w-]*)(?:\.[\w-]+)*\.[A-Za-z]{2,}\b")
_LOCAL_PART = re.compile(r"[\w.%+-]+$")
_REACH = 64  # the longest local part looked at before an "@"


def find(text: str) -> Iterator[Span]:
    # Anchored at each "@": the pattern runs only where an address can be.
    at = text.find("@")
    while at != -1:
        local = _LOCAL_PART.search(text, max(0, at - _REACH), at)
        if local is not None:
            match = _EMAIL.match(text, local.start())
            if match is not None:
                yield Span(match.start(), match.end(), "EMAIL", match.group(0))
                at = match.end() - 1
        at = text.find("@", at + 1)
