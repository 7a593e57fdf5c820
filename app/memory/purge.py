"""Everything Redis holds about one user, removed (`novaberg user delete NAME`).

Only this package knows key names, so the purge is built from the key builder itself:
every per-pair key function `f(user_id, character_id)` is scanned with the character as a
glob and every per-user one `f(user_id)` deleted, so a key added to `app.memory.keys` later
is purged without a change here. Shared
sets lose the user's members; login sessions of the user end. Turn and message records
(`record_ttl`) are left to expire: they are keyed by random ids.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import redis

from app.memory import keys

SCAN_BATCH = 500


def _builders(params: list[str]) -> list[Callable[..., str]]:
    return [
        builder
        for name, builder in vars(keys).items()
        if not name.startswith("_")
        and inspect.isfunction(builder)
        and list(inspect.signature(builder).parameters) == params
    ]


def per_pair_patterns(user_id: str) -> list[str]:
    return [builder(user_id, "*") for builder in _builders(["user_id", "character_id"])]


def per_user_keys(user_id: str) -> list[str]:
    """Keys of the user alone (their open turns, their pair index, …)."""
    return [builder(user_id) for builder in _builders(["user_id"])]


def purge_user(client: redis.Redis, user_id: str) -> int:
    """Delete the user's keys and members; returns how many keys went."""
    removed = 0
    for pattern in per_pair_patterns(user_id):
        batch = list(client.scan_iter(match=pattern, count=SCAN_BATCH))
        if batch:
            removed += client.delete(*batch)
    removed += client.delete(
        *per_user_keys(user_id),
        keys.login_failures("name", user_id),
        keys.login_blocked("name", user_id),
    )
    prefix = keys.pair_id(user_id, "")
    for shared in (keys.known_pairs(),):
        members = list(client.sscan_iter(shared, match=prefix + "*", count=SCAN_BATCH))
        if members:
            client.srem(shared, *members)
    for shared in (keys.reminders_due(), keys.reminders_claimed()):
        members = [m for m, _ in client.zscan_iter(shared, match=prefix + "*", count=SCAN_BATCH)]
        if members:
            client.zrem(shared, *members)
    for session_key in client.scan_iter(match=keys.auth_session("*"), count=SCAN_BATCH):
        if _text(client.get(session_key)) == user_id:
            removed += client.delete(session_key)
    return removed


def _text(value: str | bytes | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value
