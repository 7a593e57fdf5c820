"""Where a request may come from (SPEC §1, §9): the `Host` it names and the `Origin` it was
sent from. Pure functions over the header values; `app.api.middleware` applies them.

Host (DNS rebinding): a page of a foreign name that resolves to this server must not be
served. Origin (CSRF): a state-changing request or a WebSocket handshake whose `Origin` is
present and not the server's own is refused, whatever its auth. The server's own port is read
from the connection's local socket, so the check is right whatever port was bound.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


def host_name(host: str) -> str:
    """The name part of a `Host` value (`[::1]:8765` → `::1`, `Example.org.` → `example.org`)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name.rstrip(".")


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_allowed(raw: str | None, bound_host: str, public_origin: str | None) -> bool:
    """Allowed: loopback names, the bound host, the public origin's host, and — when bound to
    every interface — IP literals (a rebinding attack needs a name it controls)."""
    if raw is None:
        return True  # HTTP/1.0 without Host: nothing a browser sends
    name = host_name(raw)
    if name in LOOPBACK_HOSTS or name == host_name(bound_host):
        return True
    if public_origin and name == host_name(urlsplit(public_origin).netloc):
        return True
    return bound_host in WILDCARD_HOSTS and is_ip_literal(name)


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


def origin_allowed(origin: str | None, port: int | None, bound_host: str,
                   public_origin: str | None) -> bool:
    if origin is None:
        return True  # not a browser: the CSRF/rebinding check does not apply
    return origin.rstrip("/") in own_origins(port, bound_host, public_origin)
