"""The one rule of user names: `local` is the desktop user and the headless admin (no password,
no stored token: its credential is the start link or the `--token` of the process); every other
user is named by `novaberg user add` in a-z, 0-9, `_ - .`. Here, below every room, so that the
accounts (app.auth), the restore's check of a backup's accounts (app.backup) and the
per-user stores agree on it."""

from __future__ import annotations

LOCAL_USER = "local"
USER_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.")


def valid_user_name(name: str) -> bool:
    """A name `novaberg user add` accepts (never `local`)."""
    return 1 <= len(name) <= 64 and set(name) <= USER_NAME_CHARS and name != LOCAL_USER
