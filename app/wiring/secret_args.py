"""Secrets given on the command line: every local user reads a process's arguments
(`/proc/<pid>/cmdline`, `ps`), so a secret there is a secret no longer.

`--token` still works (scripts use it), but the start says in one line on stderr where the
token belongs instead: `NOVABERG_TOKEN`, `secrets.toml` (mode 0600), or `--token-file` (a
file only its owner can read, or `-` for stdin). A `--database-url` with a password warns the
same way: `NOVABERG_DATABASE_URL`, or a URL without one and libpq's `PGPASSWORD`/`~/.pgpass`.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from app.core.settings import SettingsError

ARGV_FLAG_WARNING = (
    "novaberg: warning: --token is readable by every local user (ps, /proc/PID/cmdline); "
    "use NOVABERG_TOKEN, secrets.toml (mode 0600) or --token-file instead"
)
ARGV_URL_WARNING = (
    "novaberg: warning: the password in --database-url is readable by every local user "
    "(ps, /proc/PID/cmdline); use NOVABERG_DATABASE_URL, or PGPASSWORD / ~/.pgpass instead"
)


def secret_flags(flags: dict[str, Any], token_file: str | None, stdin: TextIO) -> dict[str, Any]:
    """`flags` with the token of `token_file` added; warns on stderr for each secret that
    came as an argument. `SettingsError` for a token file others may read, or an empty one."""
    if flags.get("token") is not None:
        print(ARGV_FLAG_WARNING, file=sys.stderr)
    url = flags.get("database_url")
    if url is not None and _has_password(url):
        print(ARGV_URL_WARNING, file=sys.stderr)
    if token_file is None:
        return flags
    if flags.get("token") is not None:
        raise SettingsError("--token and --token-file: give one")
    return {**flags, "token": read_token_file(token_file, stdin)}


def read_token_file(name: str, stdin: TextIO) -> str:
    """The first line of `name` (`-`: of stdin); the file must be readable by its owner only."""
    if name == "-":
        token = stdin.readline().strip()
    else:
        path = Path(name).expanduser()
        try:
            mode = path.stat().st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise SettingsError(
                    f"--token-file {path}: readable by others (mode {oct(mode & 0o777)}); "
                    f"run: chmod 600 {path}"
                )
            token = path.read_text(encoding="utf-8").partition("\n")[0].strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"--token-file {path}: cannot read: {exc}") from None
    if not token:
        raise SettingsError(f"--token-file {name}: no token in its first line")
    return token


def _has_password(url: str) -> bool:
    try:
        return urlsplit(url).password is not None
    except ValueError:  # a malformed URL: the URL check says so later
        return False
