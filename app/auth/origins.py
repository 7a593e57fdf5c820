"""Where a request may come from (design §1, §9): the `Host` it names and the `Origin` it was
sent from. Pure functions over the header values; `app.api.middleware` applies them.

Host (DNS rebinding): a page of a foreign name that resolves to this server must not be
served; a `Host` that is not a well-formed `host [":" port]` is refused before any name is
compared. Origin (CSRF): a state-changing request or a WebSocket handshake whose `Origin` is
present and not the server's own is refused, whatever its auth. The server's own port is read
from the connection's local socket, so the check is right whatever port was bound.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - recognised, never bound

# RFC 3986 `host [":" port]`, as browsers send it: a bracketed IPv6 literal, or a dotted name
# of DNS labels (letters, digits, `-` inside, `_` for local names), which may be a dotted quad.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST = re.compile(
    rf"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>{_LABEL}(?:\.{_LABEL})*\.?))"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
_DIGITS_AND_DOTS = re.compile(r"[0-9.]+")
MAX_NAME_CHARS = 253


@dataclass(frozen=True, slots=True)
class HostHeader:
    """A parsed `Host`: the name (lower case, no trailing dot; an IPv6 literal without its
    brackets, in its short form) and the port, if one was given."""

    name: str
    port: int | None = None


def parse_host(raw: str) -> HostHeader | None:
    """`raw` read strictly as `host [":" port]`; None for anything else — whitespace, a user
    part (`localhost:1@evil.example`), text after an IPv6 literal, an empty or too large port,
    a zone id, non-ASCII look-alikes, a name of digits and dots that is not an IPv4 address."""
    if not raw.isascii():
        return None
    match = _HOST.fullmatch(raw.lower())
    if match is None:
        return None
    port = int(match["port"]) if match["port"] is not None else None
    if port is not None and port > 65535:
        return None
    if match["v6"] is not None:
        try:
            return HostHeader(str(ipaddress.IPv6Address(match["v6"])), port)
        except ValueError:
            return None
    spelled = match["name"]
    name = spelled.rstrip(".")
    if len(name) > MAX_NAME_CHARS:
        return None
    if _DIGITS_AND_DOTS.fullmatch(name):
        try:
            name = str(ipaddress.IPv4Address(name))
        except ValueError:
            return None  # 127.1, 256.0.0.1, 0177.0.0.1: no address and no name
        if spelled.endswith("."):
            return None
    return HostHeader(name, port)


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _name_of(host_or_netloc: str) -> str | None:
    """The name of a configured host (`--host`, the public origin's netloc)."""
    if not host_or_netloc:
        return host_or_netloc
    parsed = parse_host(host_or_netloc) or parse_host(f"[{host_or_netloc}]")
    return parsed.name if parsed is not None else None


def host_allowed(host: HostHeader, bound_host: str, public_origin: str | None) -> bool:
    """Allowed: loopback names, the bound host, the public origin's host, and — when bound to
    every interface — IP literals (a rebinding attack needs a name it controls)."""
    if host.name in LOOPBACK_HOSTS or host.name == _name_of(bound_host):
        return True
    if public_origin and host.name == _name_of(urlsplit(public_origin).netloc):
        return True
    return bound_host in WILDCARD_HOSTS and is_ip_literal(host.name)


def own_origins(port: int | None, bound_host: str, public_origin: str | None) -> set[str]:
    """The origins of this server's own pages: loopback names on the bound port, the bound
    host, and the configured public origin."""
    origins = {f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"}
    if bound_host:
        host = f"[{bound_host}]" if ":" in bound_host else bound_host
        origins.add(f"http://{host}:{port}")
    if public_origin:
        origins.add(public_origin)
    return origins


def origin_allowed(
    origin: str | None, port: int | None, bound_host: str, public_origin: str | None
) -> bool:
    if origin is None:
        return True  # not a browser: the CSRF/rebinding check does not apply
    return origin.rstrip("/") in own_origins(port, bound_host, public_origin)
