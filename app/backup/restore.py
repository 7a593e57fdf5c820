"""Restore a backup folder into the data dir (`novaberg restore DIR`).

In this order, and no data is changed before step 5:

1. the folder is checked whole (`archive.verify`: manifest, format version, every file a
   regular file with its size and checksum, no file missing or extra), its database is
   sound and holds accounts only if the manifest says so (`database.check_backup_database`),
   and every Redis record is parsed;
2. the data dir's lock is taken: while an app runs on it, the restore refuses;
3. what will be replaced is shown (counts now → counts in the backup, and the accounts the
   backup brings) and the user asked;
4. the marker (`datadir.RestoreMarker`, phase "saving") is written, and the current data is
   kept in a safety folder `restore-safety-<stamp>/` in the data dir, which is itself a
   complete backup (accounts included): the database, identities.txt and the characters
   folder's files as hard links (the data dir's files are not touched, and a large database
   is not copied), and a `redis.jsonl` of the current keys; the marker's phase becomes
   "installing";
5. the backup is installed, each file written to a temporary name in the data dir, fsynced
   and renamed over the old one (`storage.files.private_file`; its checksum checked again
   while it is copied): the database (into which the install's accounts are carried when the
   backup has none: they replace whatever is there; on PostgreSQL the backup's rows replace
   the store's in one transaction, `database.load_store`, so a load cut off before its commit
   left every row as it was), the data files, the data folders
   (characters: filled beside the old one, then renamed in its place), then the Redis keys —
   loaded by an embedded Redis that the restore starts on the data dir (so the next start of
   the app finds them in its AOF), or into the external Redis after its Novaberg keys are
   removed;
6. the marker is removed.

Cut off in step 4 (`kill -9`, a power cut), the data is as it was: whoever takes the lock next
removes the partial safety folder (`datadir.DataDirLock`). Cut off in step 5, or failing there,
the data is half restored and the marker stays: the app refuses to start and names the two
ways on — this restore again (finish it) or a restore of the safety folder (go back). Either
runs without a new safety copy: the marker's safety folder already holds the data from before,
and the half-restored data is nothing to keep (so a broken database file cannot stand in the
way). A database that is damaged when a restore begins is kept in the safety folder as it was
found (`damaged-novaberg.sqlite3`), beside an empty database of its own.

One module: the restore's numbered steps and the safety backup are one procedure, safe to cut
off only as a whole.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

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
    copy_folder,
    database_counts,
    database_path,
    utc_stamp,
    verify,
    write_manifest,
)
from app.backup.database import (
    Accounts,
    carry_accounts,
    check_backup_database,
    count_contents,
    dump_store,
    load_store,
)
from app.core.lifetime import crash_point
from app.core.settings import Settings
from app.storage.connection import Connection
from app.storage.database import connect_postgres
from app.storage.datadir import (
    RESTORE_MARKER,
    SAFETY_PREFIX,
    DataDirInUse,
    RestoreMarker,
    read_restore_marker,
    remove_restore_marker,
    undo_saving,
)
from app.storage.files import fsync_dir, open_regular, private_file

COUNT_NAMES = ("users", "days", "entries", "messages")
DAMAGED_PREFIX = "damaged-"  # a damaged database, kept in the safety folder as it was found
COPY_BLOCK = 1 << 20


class RestoreDeclined(Exception):
    """The user answered no; nothing was changed."""


class RestoreFailed(RuntimeError):
    """The restore stopped after it began to replace the data; the message says how to
    finish it or go back."""


@dataclasses.dataclass(frozen=True, slots=True)
class Checked:
    """A backup folder that passed step 1, with what was read from it."""

    backup: Backup
    records: list[dict[str, Any]]
    accounts: Accounts

    @property
    def has_accounts(self) -> bool:
        return self.backup.manifest.get("accounts_included") is True


def check(folder: Path) -> Checked:
    """Step 1: the whole folder, its database, then every Redis record (`BackupInvalid`
    names the problems). The records are kept for step 5: the file is read once."""
    backup = verify(folder)
    with_accounts = backup.manifest.get("accounts_included") is True
    problems, accounts = check_backup_database(
        folder / DATABASE_FILE, accounts_included=with_accounts
    )
    if problems:
        raise BackupInvalid(folder, problems)
    try:
        records = list(redis_snapshot.read_records(folder / REDIS_FILE))
    except redis_snapshot.SnapshotError as exc:
        raise BackupInvalid(folder, [str(exc)]) from None
    return Checked(backup, records, accounts)


def current_counts(data_path: Path, database_url: str | None = None) -> dict[str, int] | None:
    conn: Connection
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


def describe_change(current: dict[str, int] | None, checked: Checked) -> str:
    backup = checked.backup
    counts = backup.manifest.get("counts", {})
    lines = [
        f"Backup {backup.path.name} (made {backup.manifest.get('created_at')}, "
        f"Novaberg {backup.manifest.get('app_version')}):"
    ]
    for name in COUNT_NAMES:
        now = "-" if current is None else current.get(name, 0)
        lines.append(f"  {name:<9} now {now:>8}  →  from the backup {counts.get(name, 0):>8}")
    lines.append(f"  Redis keys from the backup: {counts.get('redis_keys', 0)}")
    if checked.has_accounts:
        lines.append(
            "  The backup HOLDS ACCOUNTS (password and token hashes); they replace the "
            f"users and tokens of this install: {checked.accounts.describe()}."
        )
    else:
        lines.append(
            "  The backup holds no accounts: the users and tokens of this install are kept."
        )
    return "\n".join(lines)


def describe_cut_off(marker: RestoreMarker, checked: Checked) -> str:
    going_back = checked.backup.path == marker.safety
    return "\n".join(
        [
            f"A restore of {marker.backup} was cut off half-way: the data dir holds part of it.",
            f"The data from before that restore is kept in {marker.safety}.",
            "This restore "
            + (
                "goes back to it."
                if going_back
                else f"installs {checked.backup.path.name} in place of the half-restored "
                "data (no new safety copy is made)."
            ),
            describe_change(None, checked),
        ]
    )


def restore(
    settings: Settings,
    folder: Path,
    *,
    confirm: Callable[[str], bool],
    say: Callable[[str], None] = print,
) -> Path:
    """Restore `folder` into the settings' data dir; returns the safety folder."""
    checked = check(folder)
    data_path = settings.data_path
    with open_data_dir(data_path, restoring=True) as busy:
        if busy:
            raise DataDirInUse(f"{busy}: an app is running on it; stop the app, then restore")
        marker = read_restore_marker(data_path)
        if marker is not None and marker.phase == "saving":
            undo_saving(data_path, marker)  # cut off before it changed anything
            marker = None
        if marker is not None:
            _check_safety(marker, checked)
        question = (
            describe_change(current_counts(data_path, settings.database_url), checked)
            if marker is None
            else describe_cut_off(marker, checked)
        )
        if not confirm(question + "\nReplace the current data with the backup?"):
            raise RestoreDeclined("restore cancelled; nothing was changed")
        if marker is None:
            marker = _keep_aside(settings, checked.backup.path)
            say(f"The current data was kept in {marker.safety}.")
        else:
            marker = dataclasses.replace(marker, backup=checked.backup.path)
            marker.write(data_path)
        try:
            _install(settings, checked, marker.safety)
        except Exception as exc:
            raise RestoreFailed(
                f"restore failed half-way: {exc}\n" + _ways_on(settings, marker)
            ) from exc
        remove_restore_marker(data_path)
    say(f"Restored {checked.backup.path.name}. Your previous data is in {marker.safety}.")
    return marker.safety


def _check_safety(marker: RestoreMarker, checked: Checked) -> None:
    """Finishing a cut-off restore carries the install's accounts from its safety folder
    (unless the backup brings its own): that folder must be sound."""
    if checked.has_accounts or checked.backup.path == marker.safety:
        return
    try:
        verify(marker.safety)
    except BackupInvalid as exc:
        raise BackupError(
            f"a restore was cut off here, and its safety folder {marker.safety} is not usable "
            f"({'; '.join(exc.problems)}): this install's accounts cannot be carried from it. "
            "Restore a backup with accounts, or remove "
            f"{marker.safety.parent / RESTORE_MARKER} to restore without them"
        ) from None


# --- step 4: the safety folder -----------------------------------------------------------


def _keep_aside(settings: Settings, backup: Path) -> RestoreMarker:
    """The current data becomes a backup folder of its own (accounts included), so that going
    back is one more restore; the data dir's files are left in place."""
    data_path = settings.data_path
    now = time.time()
    safety = data_path / (SAFETY_PREFIX + utc_stamp(now))
    n = 1
    while safety.exists():
        n += 1
        safety = data_path / f"{SAFETY_PREFIX}{utc_stamp(now)}-{n}"
    marker = RestoreMarker.begin(backup, safety)
    marker.write(data_path)
    try:
        safety.mkdir(mode=0o700)
        _fill_safety(settings, safety, now)
    except Exception as exc:
        shutil.rmtree(safety, ignore_errors=True)
        remove_restore_marker(data_path)
        raise BackupError(
            f"could not keep the current data first ({exc}); nothing was changed"
        ) from exc
    installing = dataclasses.replace(marker, phase="installing")
    installing.write(data_path)
    crash_point(settings, "restore:saved")
    return installing


def _fill_safety(settings: Settings, safety: Path, now: float) -> None:
    data_path = settings.data_path
    database = database_path(data_path)
    if settings.database_url:  # PostgreSQL's rows are dumped as the folder's own file
        dump_store(settings.database_url, safety / DATABASE_FILE, include_accounts=True)
    elif database.exists():
        if _fold_wal(database):
            _link(database, safety / DATABASE_FILE)
        else:  # damaged: kept as it was found, with an empty database as the folder's own
            for suffix in ("", "-wal"):
                found = database.with_name(database.name + suffix)
                if found.exists():
                    _link(found, safety / (DAMAGED_PREFIX + DATABASE_FILE + suffix))
    if not (safety / DATABASE_FILE).exists():
        sqlite3.connect(safety / DATABASE_FILE).close()
    for name in DATA_FILES:
        if (data_path / name).is_file() and not (data_path / name).is_symlink():
            _link(data_path / name, safety / name)
    for name in DATA_FOLDERS:
        copy_folder(settings.files_path / name, safety / name, place=_link)
    crash_point(settings, "restore:saving")
    with (
        redis_of(settings, app_running=False) as client,
        (safety / REDIS_FILE).open("w", encoding="utf-8", errors="surrogateescape") as out,
    ):
        if settings.redis_url:
            redis_snapshot.write_snapshot(client, out)
        else:  # the data dir's own server, started by this restore: nobody else uses it
            redis_snapshot.write_private_snapshot(client, out)
        out.flush()
        os.fsync(out.fileno())
    counts = database_counts(safety / DATABASE_FILE)
    write_manifest(safety, counts, accounts_included=True, now=now)
    fsync_dir(safety)


def _fold_wal(database: Path) -> bool:
    """Fold the WAL into the database file (the safety copy is that one file); False when the
    database is damaged."""
    try:
        conn = sqlite3.connect(database)
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False
    if busy:
        raise BackupError(f"the WAL of {database} could not be folded into it (busy)")
    return verdict == "ok"


def _link(source: Path, target: Path) -> None:
    """`target` names the same file as `source` (a copy where the file system has no hard
    links): the install renames new files over the data dir's names, so the safety folder
    keeps the old ones without copying them."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        shutil.copyfile(source, target, follow_symlinks=False)


# --- step 5: the install -------------------------------------------------------------------


def _install(settings: Settings, checked: Checked, safety: Path) -> None:
    data_path = settings.data_path
    backup = checked.backup
    if settings.database_url:
        _install_rows(settings, backup)
    else:
        _install_file(settings, checked, safety)
    crash_point(settings, "restore:database")
    for name in DATA_FILES:
        if name in _listed(backup):
            with private_file(data_path / name) as out:
                _copy_checked(settings, backup, name, out)
        else:
            (data_path / name).unlink(missing_ok=True)  # kept in the safety folder
    fsync_dir(data_path)
    for name in DATA_FOLDERS:
        _install_folder(settings, backup, name)
    crash_point(settings, "restore:files")
    if not settings.redis_url:  # the keys are in the safety folder; the server starts afresh
        shutil.rmtree(redis_dir(data_path), ignore_errors=True)
    # Appended writes are flushed when the server stops (SIGTERM); per-write fsync would
    # make a large restore slow for nothing.
    with redis_of(settings, app_running=False, appendfsync="no") as client:
        if settings.redis_url:
            redis_snapshot.delete_backed_up_keys(client)
        first, rest = (
            checked.records[: redis_snapshot.LOAD_BATCH],
            checked.records[redis_snapshot.LOAD_BATCH :],
        )
        redis_snapshot.load_snapshot(client, first)
        crash_point(settings, "restore:redis")
        redis_snapshot.load_snapshot(client, rest)
    crash_point(settings, "restore:loaded")  # all installed; the marker is still there


def _install_file(settings: Settings, checked: Checked, safety: Path) -> None:
    """The backup's database file in the data dir's place, with the install's accounts."""
    backup = checked.backup
    database = database_path(settings.data_path)
    for suffix in ("-wal", "-shm", "-journal"):  # the old database's; never the new one's
        database.with_name(database.name + suffix).unlink(missing_ok=True)
    with private_file(database) as out:
        _copy_checked(settings, backup, DATABASE_FILE, out)
    crash_point(settings, "restore:installed")  # the backup's database, no accounts carried yet
    if not checked.has_accounts and backup.path != safety:
        carry_accounts(database, safety / DATABASE_FILE)


def _install_rows(settings: Settings, backup: Backup) -> None:
    """The backup's rows in PostgreSQL, in one transaction (a cut-off load changed nothing);
    read from a checked copy, because bringing it to this version's schema writes it. A
    backup without accounts has none (`check` holds that), so the server's stay."""
    loading = database_path(settings.data_path).with_name(DATABASE_FILE + ".restoring")
    try:
        with private_file(loading) as out:
            _copy_checked(settings, backup, DATABASE_FILE, out)
        load_store(
            loading,
            settings.database_url or "",
            before_commit=lambda: crash_point(settings, "restore:rows"),
        )
    finally:
        loading.unlink(missing_ok=True)


def _install_folder(settings: Settings, backup: Backup, name: str) -> None:
    """The files dir's folder `name` (characters, media) replaced by the backup's: its files
    copied, each checked, into a hidden folder beside it, which then takes the folder's place
    by two renames; the old folder (kept in the safety folder) is removed. Cut off anywhere, a
    restore run again finds the leftovers and starts this step afresh."""
    data_path = settings.files_path
    data_path.mkdir(parents=True, exist_ok=True, mode=0o700)
    current, fresh, old = (
        data_path / name,
        data_path / f".{name}.restoring",
        data_path / f".{name}.replaced",
    )
    for leftover in (fresh, old):
        _remove(leftover)
    prefix = name + "/"
    entries = [entry for entry in _listed(backup) if entry.startswith(prefix)]
    for entry in entries:
        target = fresh / entry.removeprefix(prefix)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with private_file(target) as out:
            _copy_checked(settings, backup, entry, out)
    if current.is_symlink() or current.exists():
        current.rename(old)
    if entries:
        fresh.rename(current)
    fsync_dir(data_path)
    _remove(old)


def _remove(path: Path) -> None:
    """Remove a file, a link (not what it points to) or a folder, if it is there."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _listed(backup: Backup) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in backup.manifest["files"]}


def _copy_checked(settings: Settings, backup: Backup, name: str, out: IO[bytes]) -> None:
    """Copy the backup's file `name` into `out`, its checksum checked again on the way: what
    is installed is what was verified."""
    digest = hashlib.sha256()
    with open_regular(backup.path / name) as handle:
        first = True
        while block := handle.read(COPY_BLOCK):
            digest.update(block)
            out.write(block)
            if first:
                first = False
                crash_point(settings, "restore:copying")
    if digest.hexdigest() != _listed(backup)[name]["sha256"]:
        raise BackupError(f"{backup.path / name} changed after it was checked")


def _ways_on(settings: Settings, marker: RestoreMarker) -> str:
    return (
        f"Your data as it was before the restore is kept in {marker.safety} (a complete "
        "backup with accounts). To go back to it, run:\n"
        f"  {marker.back_command(settings.data_path)}\n"
        "or, to finish this restore, run it again:\n"
        f"  {marker.finish_command(settings.data_path)}"
    )
