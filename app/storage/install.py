"""The install's identity: the store and the files dir say they belong together.

The files beside the store — the characters (definitions, pictures, imported cards) and the
journal's photos — live in the files dir (setting `files_dir`, default the data dir).
Processes that share one PostgreSQL point it at one shared volume, so a photo uploaded
through one process is served by every other. A store and a files dir of different installs
would serve rows whose files are someone else's (or missing): the store's `_install` row and
the files dir's `INSTALL_FILE` hold the same id, and a start that finds two different ids
refuses, in one line (`InstallMismatch`, exit 2).

The first start makes the id and writes it to both. Where only one side has it, the other
takes it: a files dir pointed at for the first time (or a data dir from before the id), a
store restored from a backup (a backup carries no `_install` row, so a restore keeps the
files dir's id). Two processes starting at once on an empty store make one id: the row is a
singleton, the loser reads the winner's.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from app.storage.datadir import DataDirError

INSTALL_TABLE = "_install"  # the store's own, like `_migrations`: never backed up or restored
INSTALL_FILE = ".novaberg-install"  # in the files dir


class InstallMismatch(DataDirError):
    """The store and the files dir belong to different installs."""


def store_install_id(conn: sqlite3.Connection) -> str:
    """The store's install id, made now if it has none (on the writer, in its transaction)."""
    _keep_first_id(conn, f"nb-{secrets.token_hex(8)}")
    return str(conn.execute(f"SELECT id FROM {INSTALL_TABLE}").fetchone()[0])


def adopt_files_id(conn: sqlite3.Connection, files_id: str) -> None:
    """A store without an id takes the files dir's (a restored store)."""
    _keep_first_id(conn, files_id)


def _keep_first_id(conn: sqlite3.Connection, install_id: str) -> None:
    """Give the store `install_id` unless it has one: the first id a store got stays its id
    (another process may have written one between our look and this write)."""
    conn.execute(
        f"INSERT INTO {INSTALL_TABLE} (singleton, id, created_at) "
        "VALUES ('install', ?, ?) ON CONFLICT (singleton) DO NOTHING",
        (install_id, time.time()),
    )


def files_install_id(files_path: Path) -> str | None:
    try:
        return (files_path / INSTALL_FILE).read_text(encoding="ascii").strip() or None
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallMismatch(
            f"files dir {files_path}: {INSTALL_FILE} cannot be read ({exc})"
        ) from None


def write_files_id(files_path: Path, install_id: str) -> None:
    """Write the id into the files dir, unless another process wrote one first."""
    files_path.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = files_path / f".{INSTALL_FILE}.{uuid.uuid4().hex[:8]}.tmp"
    temporary.write_text(install_id + "\n", encoding="ascii")
    try:
        os.link(temporary, files_path / INSTALL_FILE)  # never over another's
    except FileExistsError:
        pass
    finally:
        temporary.unlink(missing_ok=True)


def mismatch(files_path: Path, store_id: str, files_id: str, where: str) -> InstallMismatch:
    return InstallMismatch(
        f"files dir {files_path} belongs to install {files_id}, the store ({where}) to "
        f"install {store_id}: point --files-dir (NOVABERG_FILES_DIR) at this install's "
        "files, the same for every process of it"
    )


def checked_install(conn: Any, files_path: Path, where: str) -> str:
    """The install id the store and the files dir agree on (see the module): made, adopted
    from one side, or `InstallMismatch`. Runs on the store's writer; `where` names the
    store for the message (never a password)."""
    files_id = files_install_id(files_path)
    if files_id is not None:
        adopt_files_id(conn, files_id)
    store_id = store_install_id(conn)
    if files_id is None:
        write_files_id(files_path, store_id)
        files_id = files_install_id(files_path)
    if files_id != store_id:
        raise mismatch(files_path, store_id, str(files_id), where)
    return store_id
