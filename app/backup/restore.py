"""Restore a backup folder into the data dir (`novaberg restore DIR`).

In this order, and nothing is changed before step 4:

1. the folder is checked whole (`archive.verify`: manifest, format version, every checksum,
   no file missing or extra) and every Redis record is parsed;
2. the data dir's lock is taken: while an app runs on it, the restore refuses;
3. what will be replaced is shown (counts now → counts in the backup) and the user asked;
4. the current data is moved into a safety folder `restore-safety-<stamp>/` in the data dir,
   which is itself a complete backup (accounts included): the database file, identities.txt,
   the characters folder, and a `redis.jsonl` of the current keys; going back is
   `novaberg restore <safety folder>`;
5. the backup is installed: the database file (the install's accounts are carried over when
   the backup has none), the data files and folders (characters), and the Redis keys — loaded by an embedded Redis
   that the restore starts on the data dir (so the next start of the app finds them in its
   AOF), or into the external Redis after its Novaberg keys are removed.

A failure in step 5 leaves the safety folder as it is and raises `RestoreFailed`, whose
message says how to get back.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.backup import redis_snapshot
from app.backup.access import open_data_dir, redis_dir, redis_of
from app.backup.archive import (
    DATA_FILES,
    DATA_FOLDERS,
    DATABASE_FILE,
    REDIS_FILE,
    Backup,
    BackupError,
    BackupInvalid,
    database_counts,
    database_path,
    utc_stamp,
    verify,
    write_manifest,
)
from app.backup.database import carry_accounts, count_contents, dump_store, load_store
from app.core.settings import Settings
from app.storage.database import connect_postgres
from app.storage.datadir import DataDirInUse, restore_command

SAFETY_PREFIX = "restore-safety-"
COUNT_NAMES = ("users", "days", "entries", "messages")


class RestoreDeclined(Exception):
    """The user answered no; nothing was changed."""


class RestoreFailed(RuntimeError):
    """The restore stopped after the current data was moved aside; the message says how to
    get back."""


def check(folder: Path) -> tuple[Backup, list[dict[str, Any]]]:
    """Step 1: the whole folder, then every Redis record (`BackupInvalid` names problems).
    The records are kept for step 5: the file is read once."""
    backup = verify(folder)
    try:
        records = list(redis_snapshot.read_records(folder / REDIS_FILE))
    except redis_snapshot.SnapshotError as exc:
        raise BackupInvalid(folder, [str(exc)]) from None
    return backup, records


def current_counts(data_path: Path, database_url: str | None = None) -> dict[str, int] | None:
    if database_url:
        conn = connect_postgres(database_url, readonly=True)
        try:
            return count_contents(conn)
        finally:
            conn.close()
    path = database_path(data_path)
    if not path.exists():
        return None
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return count_contents(conn)
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


def describe_change(current: dict[str, int] | None, backup: Backup) -> str:
    counts = backup.manifest.get("counts", {})
    lines = [f"Backup {backup.path.name} (made {backup.manifest.get('created_at')}, "
             f"Novaberg {backup.manifest.get('app_version')}):"]
    for name in COUNT_NAMES:
        now = "-" if current is None else current.get(name, 0)
        lines.append(f"  {name:<9} now {now:>8}  →  from the backup {counts.get(name, 0):>8}")
    lines.append(f"  Redis keys from the backup: {counts.get('redis_keys', 0)}")
    if not backup.manifest.get("accounts_included"):
        lines.append("  The backup holds no accounts: the users and tokens of this install "
                     "are kept.")
    return "\n".join(lines)


def restore(settings: Settings, folder: Path, *, confirm: Callable[[str], bool],
            say: Callable[[str], None] = print) -> Path:
    """Restore `folder` into the settings' data dir; returns the safety folder."""
    backup, records = check(folder)
    data_path = settings.data_path
    with open_data_dir(data_path) as busy:
        if busy:
            raise DataDirInUse(f"{busy}: an app is running on it; stop the app, then restore")
        question = describe_change(current_counts(data_path, settings.database_url), backup)
        if not confirm(question + "\nReplace the current data with the backup?"):
            raise RestoreDeclined("restore cancelled; nothing was changed")
        safety = _move_aside(settings)
        say(f"The current data was moved to {safety}.")
        try:
            _install(settings, backup, records, safety)
        except Exception as exc:
            raise RestoreFailed(f"restore failed half-way: {exc}\n" + _go_back(settings, safety)) from exc
    say(f"Restored {backup.path.name}. Your previous data is in {safety}.")
    return safety


def _moved_items(settings: Settings) -> list[Path]:
    database = database_path(settings.data_path)
    items = [] if settings.database_url else [  # PostgreSQL's rows are dumped, not moved
        database.with_name(database.name + suffix) for suffix in ("", "-wal", "-shm")]
    items += [settings.data_path / name for name in (*DATA_FILES, *DATA_FOLDERS)]
    return [item for item in items if item.exists()]


def _move_aside(settings: Settings) -> Path:
    """Step 4: the current data becomes a backup folder of its own (accounts included), so
    that going back is one more restore."""
    data_path = settings.data_path
    now = time.time()
    safety = data_path / (SAFETY_PREFIX + utc_stamp(now))
    n = 1
    while safety.exists():
        n += 1
        safety = data_path / f"{SAFETY_PREFIX}{utc_stamp(now)}-{n}"
    safety.mkdir(mode=0o700)
    moved: list[tuple[Path, Path]] = []
    try:
        _save_current(settings, safety, moved)
    except Exception as exc:
        for original, kept in reversed(moved):  # put back what was moved: nothing changed
            kept.rename(original)
        shutil.rmtree(safety, ignore_errors=True)
        raise BackupError(f"could not keep the current data first ({exc}); nothing was "
                          "changed") from exc
    if not settings.redis_url:  # its keys are in the safety folder; the restore starts afresh
        shutil.rmtree(redis_dir(data_path), ignore_errors=True)
    return safety


def _save_current(settings: Settings, safety: Path, moved: list[tuple[Path, Path]]) -> None:
    """Fill the safety folder: Redis dumped, files moved (each move recorded in `moved`)."""
    now = time.time()
    data_path = settings.data_path
    database = database_path(data_path)
    if settings.database_url:
        dump_store(settings.database_url, safety / DATABASE_FILE, include_accounts=True)
    elif database.exists():  # fold the WAL into the file: the safety copy is one file
        conn = sqlite3.connect(database)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    with redis_of(settings, app_running=False) as client, \
            (safety / REDIS_FILE).open("w", encoding="utf-8", errors="surrogateescape") as out:
        redis_snapshot.write_snapshot(client, out)
    for item in _moved_items(settings):
        kept = safety / item.name.replace(database.name, DATABASE_FILE, 1)
        item.rename(kept)
        moved.append((item, kept))
    if not (safety / DATABASE_FILE).exists():
        sqlite3.connect(safety / DATABASE_FILE).close()  # nothing was there: an empty one
    counts = database_counts(safety / DATABASE_FILE)
    write_manifest(safety, counts, accounts_included=True, now=now)


def _install(settings: Settings, backup: Backup, records: list[dict[str, Any]],
             safety: Path) -> None:
    data_path = settings.data_path
    target = database_path(data_path)
    if settings.database_url:
        # The backup's file is copied first: bringing it to this version's schema writes it.
        loading = target.with_name(target.name + ".restoring")
        shutil.copyfile(backup.path / DATABASE_FILE, loading)
        try:
            load_store(loading, settings.database_url)
        finally:
            loading.unlink(missing_ok=True)
    else:
        shutil.copyfile(backup.path / DATABASE_FILE, target)
        target.chmod(0o600)
        previous = safety / DATABASE_FILE
        if not backup.manifest.get("accounts_included") and previous.exists():
            carry_accounts(target, previous)
    for name in DATA_FILES:
        if (backup.path / name).is_file():
            shutil.copyfile(backup.path / name, data_path / name)
    for name in DATA_FOLDERS:
        if (backup.path / name).is_dir():
            shutil.copytree(backup.path / name, data_path / name)
    # Appended writes are flushed when the server stops (SIGTERM); per-write fsync would
    # make a large restore slow for nothing.
    with redis_of(settings, app_running=False, appendfsync="no") as client:
        if settings.redis_url:
            redis_snapshot.delete_backed_up_keys(client)
        redis_snapshot.load_snapshot(client, records)


def _go_back(settings: Settings, safety: Path) -> str:
    return (f"Your data as it was before the restore is kept in {safety} (a complete backup "
            "with accounts). To go back to it, run:\n"
            f"  {restore_command(settings.data_path, safety, yes=True)}")
