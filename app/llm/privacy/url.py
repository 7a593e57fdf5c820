"""Private URLs: shared albums, cloud shares, meeting links, payment links — by host and
path (the table `rules.PRIVATE_URLS`). Public sites stay."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

from app.llm.privacy.rules import PRIVATE_URLS
from app.llm.privacy.scan import lowered, positions
from app.llm.privacy.spans import Span

_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'\]]+[^\s<>\"'\].,;:!?)]", re.IGNORECASE)


_START = re.compile(r"https?://|www\.", re.IGNORECASE)


def find(text: str) -> Iterator[Span]:
    # Anchored where a link can start ("http", "www."), found with str.find.
    low = lowered(text)
    starts = sorted({*_positions(low, "http"), *_positions(low, "www.")})
    done = 0
    for at in starts:
        if at < done:
            continue
        match = _URL.match(text, at)
        if match is None:
            continue
        done = match.end()
        if is_private(match.group(0)):
            yield Span(match.start(), match.end(), "URL", match.group(0))


def _positions(low: str, marker: str) -> Iterator[int]:
    for at in positions(low, marker):
        if at == 0 or not low[at - 1].isalnum():
            yield at


def is_private(url: str) -> bool:
    parts = urlsplit(url if "://" in url else "https://" + url)
    host = (parts.hostname or "").lower().removeprefix("www.")
    path = parts.path or "/"
    for known_host, prefix in PRIVATE_URLS:
        host_fits = (not known_host or host == known_host.lstrip(".")
                     or (known_host.startswith(".") and host.endswith(known_host)))
        if host_fits and (path.startswith(prefix) if known_host else prefix in path):
            return True
    return False
