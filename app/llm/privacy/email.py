"""E-mail addresses (no library needed: the shape is the whole test)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from app.llm.privacy.spans import Span

_EMAIL = re.compile(r"(?<![\w.+-])[\w.%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")


def find(text: str) -> Iterator[Span]:
    if "@" not in text:
        return
    for match in _EMAIL.finditer(text):
        yield Span(match.start(), match.end(), "EMAIL", match.group(0))
