"""Whether a host name or address is this machine's own loopback: the one rule for the bind
host (`--host`: an open server without users is refused) and for an external Redis (one off
this machine without a password is warned about, `app.storage.redis_driver`)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """`localhost`, 127.0.0.0/8 or ::1 (an IPv6 literal with or without its brackets)."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
