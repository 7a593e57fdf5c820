"""Private URLs: shared albums, cloud shares, meeting links, payment links — by host and
path (the table `rules.PRIVATE_URLS`). Public sites stay."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

from app.llm.privacy.rules import PRIVATE_URLS
from app.llm.privacy.spans import Span

_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'\]]+[^\s<>\"'\].,;:!?)]", re.IGNORECASE)


def find(text: str) -> Iterator[Span]:
    if "http" not in text and "www." not in text and "HTTP" not in text:
        return
    for match in _URL.finditer(text):
        if is_private(match.group(0)):
            yield Span(match.start(), match.end(), "URL", match.group(0))


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
