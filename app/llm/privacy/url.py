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
# A known private host written without "https://" ("meet.google.com/qvx-tkdr-mhe"): only
# with a path, the part that makes it private.
_BARE = re.compile(r"[\w.-]+/[^\s<>\"'\]]*[^\s<>\"'\].,;:!?)]")
_BARE_HOSTS = frozenset(host for host, _ in PRIVATE_URLS if host and not host.startswith("."))


def find(text: str) -> Iterator[Span]:
    # Anchored where a link can start ("http", "www.", a known private host), found with
    # str.find.
    low = lowered(text)
    starts = sorted({*_positions(low, "http"), *_positions(low, "www.")})
    bare = set(_bare_hosts(low))
    done = 0
    for at in sorted({*starts, *bare}):
        if at < done:
            continue
        match = _URL.match(text, at) or (_BARE.match(text, at) if at in bare else None)
        if match is None:
            continue
        done = match.end()
        if is_private(match.group(0)):
            yield Span(match.start(), match.end(), "URL", match.group(0))


def _bare_hosts(low: str) -> Iterator[int]:
    """Where a known private host stands on its own right before a "/"."""
    for slash in positions(low, "/"):
        at = slash
        while at > 0 and (low[at - 1].isalnum() or low[at - 1] in ".-"):
            at -= 1
        if low[at:slash] in _BARE_HOSTS and (at == 0 or low[at - 1] not in "/@_"):
            yield at


def _positions(low: str, marker: str) -> Iterator[int]:
    for at in positions(low, marker):
        if at == 0 or not low[at - 1].isalnum():
            yield at


def is_private(url: str) -> bool:
    parts = urlsplit(url if "://" in url else "https://" + url)
    host = (parts.hostname or "").lower().removeprefix("www.")
    path = parts.path or "/"
    for known_host, prefix in PRIVATE_URLS:
        host_fits = (
            not known_host
            or host == known_host.lstrip(".")
            or (known_host.startswith(".") and host.endswith(known_host))
        )
        if host_fits and (path.startswith(prefix) if known_host else prefix in path):
            return True
    return False
