"""Backup folders: create one, check one, list and prune those in the data dir.

A backup is a folder `novaberg-backup-<UTC stamp>/` holding

- `novaberg.sqlite3`: the database, copied through SQLite's online backup API
  (`app.backup.database`): every table, without accounts unless asked for;
- `redis.jsonl`: every Novaberg key with its TTL (`app.backup.redis_snapshot`);
- `identities.txt` when the data dir has one (the names the privacy gateway masks);
- `characters/`: the data dir's character folder as it is — the shared TOML files and every
  user's own characters (definition, picture, card file); each file is listed in the
  manifest under its path (`characters/users/local/lena.toml`);
- `media/`: the photos of journal entries and their thumbnails (`app.journal.media`), each
  listed in the manifest like the characters' files (`media/local/media_….jpg`);
- `manifest.json`: `format_version`, `app_version`, `created_at`, `accounts_included`,
  per file `name`, `bytes`, `sha256`, and `counts` (users, days, entries, messages,
  media, redis_keys, characters).

Never in a backup: `secrets.toml` (API keys), `config.toml` (this machine's settings: model
server, Redis URL, port), login sessions, and — unless `include_accounts` — the `users` and
`api_tokens` tables (password and token hashes).

A backup is written into a hidden `.…partial` folder and renamed when complete, so a crash
never leaves something that looks like a backup.

One module: creating and verifying a backup folder share its manifest, its checksums and its
file rules.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import redis

from app import __version__
from app.backup import redis_snapshot
from app.backup.database import copy_database, count_contents, dump_store
from app.characters.book import DATA_DIR_FOLDER as CHARACTERS_FOLDER
from app.core import log as logctx
from app.core.clock import local_moment
from app.journal.media import MEDIA_FOLDER
from app.storage.datadir import DATABASE_FILE as LIVE_DATABASE
from app.storage.files import NotRegular, kind_of, open_regular

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DATABASE_FILE = "novaberg.sqlite3"
REDIS_FILE = "redis.jsonl"
DATA_FILES = ("identities.txt",)  # plain files of the data dir that are user data
DATA_FOLDERS = (CHARACTERS_FOLDER, MEDIA_FOLDER)  # folders of the files dir: user data, whole
REQUIRED_FILES = (DATABASE_FILE, REDIS_FILE)
BACKUP_PREFIX = "novaberg-backup-"
BACKUPS_DIR = "backups"  # inside the data dir
PARTIAL_MAX_AGE_SECONDS = 3600

log = logging.getLogger(__name__)


class BackupError(RuntimeError):
    """A backup could not be made; the message says why."""


class BackupInvalid(BackupError):
    """A backup folder failed its checks; `problems` names each one."""

    def __init__(self, folder: Path, problems: list[str]) -> None:
        super().__init__(f"{folder} is not a usable backup: " + "; ".join(problems))
        self.folder = folder
        self.problems = problems


class BackupSummary(msgspec.Struct, frozen=True):
    """What the API and the log show of a backup (field order: the answer's key order)."""

    name: str
    path: str
    created_at: str | None
    app_version: str | None
    bytes: int  # of every file the manifest lists
    accounts_included: bool
    counts: dict[str, int]  # the manifest's `counts`: users, days, entries, …


@dataclass(frozen=True, slots=True)
class Backup:
    path: Path
    manifest: dict[str, Any]

    def summary(self) -> BackupSummary:
        return BackupSummary(
            name=self.path.name,
            path=str(self.path),
            created_at=self.manifest.get("created_at"),
            app_version=self.manifest.get("app_version"),
            bytes=sum(f.get("bytes", 0) for f in self.manifest.get("files", [])),
            accounts_included=bool(self.manifest.get("accounts_included")),
            counts=self.manifest.get("counts", {}),
        )


def database_path(data_path: Path) -> Path:
    """The live database of a data dir."""
    return data_path / LIVE_DATABASE


def utc_stamp(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def sha256_of(path: Path) -> str:
    """The file's checksum; `NotRegular` for a link or anything but a regular file."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def create_backup(
    data_path: Path,
    client: redis.Redis,
    target_dir: Path,
    *,
    embedded_redis_dir: Path | None,
    include_accounts: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    database_url: str | None = None,
    files_path: Path | None = None,
) -> Backup:
    """Write a new backup folder into `target_dir` and return it. Blocking: the app calls
    it from a worker thread. `embedded_redis_dir`: the files of the embedded Redis that
    `client` talks to (its snapshot is then one moment), None for an external Redis. The
    database is copied before Redis is read (see `app.backup.redis_snapshot` on why); from
    PostgreSQL (`database_url`) it is written into the same SQLite file (`dump_store`).
    `files_path`: the files dir the characters and photos are read from (default the data
    dir; setting `files_dir`)."""
    database = database_path(data_path)
    if database_url is None and not database.exists():
        raise BackupError(f"no database at {database}: nothing to back up")
    target_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    now = time.time()
    final = _free_name(target_dir, BACKUP_PREFIX + utc_stamp(now))
    partial = target_dir / f".{final.name}.partial"
    partial.mkdir(mode=0o700)
    try:
        if database_url:
            dump_store(database_url, partial / DATABASE_FILE, include_accounts=include_accounts)
        else:
            copy_database(database, partial / DATABASE_FILE, include_accounts=include_accounts)
        counts = database_counts(partial / DATABASE_FILE)
        with (partial / REDIS_FILE).open("w", encoding="utf-8", errors="surrogateescape") as out:
            if embedded_redis_dir is not None:
                counts["redis_keys"] = redis_snapshot.write_point_in_time(
                    client, embedded_redis_dir, out, should_stop
                )
            else:
                counts["redis_keys"] = redis_snapshot.write_snapshot(client, out, should_stop)
        for name in DATA_FILES:
            copy_data_file(data_path / name, partial / name)
        for name in DATA_FOLDERS:
            copy_folder((files_path or data_path) / name, partial / name)
        counts["characters"] = sum(1 for _ in (partial / CHARACTERS_FOLDER).rglob("*.toml"))
        manifest = write_manifest(partial, counts, accounts_included=include_accounts, now=now)
        os.replace(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return Backup(final, manifest)


def copy_data_file(source: Path, target: Path) -> bool:
    """Copy a plain file of the data dir (when it is there); a link or anything but a regular
    file is left out, with a warning: a backup holds only the data dir's own files."""
    try:
        with open_regular(source) as handle, target.open("xb") as out:
            shutil.copyfileobj(handle, out)
    except FileNotFoundError:
        return False
    except NotRegular as exc:
        log.warning(f"{exc}: not backed up", extra=logctx.fields(file=str(source)))
        return False
    return True


def copy_folder(
    source: Path, target: Path, place: Callable[[Path, Path], object] = copy_data_file
) -> None:
    """A data dir folder's regular files (not its temporary `.…tmp` ones), if it exists,
    each put in place by `place(file, destination)`; a link in it, to a file or a folder,
    is not followed (and left out with a warning)."""
    if not source.is_dir() or source.is_symlink():
        return
    for path in walk(source):
        if path.name.startswith("."):
            continue
        if not path.is_file() or path.is_symlink():
            log.warning(
                f"{path} is {kind_of(path.lstat().st_mode)}: not backed up",
                extra=logctx.fields(file=str(path)),
            )
            continue
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        place(path, destination)


def walk(folder: Path) -> list[Path]:
    """Everything under `folder` but its real folders — files, links (to files or folders),
    anything else —, sorted; no link is followed."""
    found = []
    for top, folders, files in os.walk(folder, followlinks=False):
        here = Path(top)
        found += [here / name for name in files]
        found += [here / name for name in folders if (here / name).is_symlink()]
    return sorted(found)


def backup_files(folder: Path) -> list[Path]:
    """Every regular file of a backup folder but its manifest, those of its data folders
    included (no link followed)."""
    return [
        path
        for path in walk(folder)
        if path != folder / MANIFEST and stat.S_ISREG(path.lstat().st_mode)
    ]


def write_manifest(
    folder: Path, counts: dict[str, int], *, accounts_included: bool, now: float
) -> dict[str, Any]:
    """Describe the files now in `folder` in its `manifest.json` (and make them private)."""
    files = backup_files(folder)
    manifest = {
        "kind": "novaberg.backup",
        "format_version": FORMAT_VERSION,
        "app_version": __version__,
        "created_at": dt.datetime.fromtimestamp(now, dt.UTC).isoformat(timespec="seconds"),
        "accounts_included": accounts_included,
        "files": [_file_entry(folder, path) for path in files],
        "counts": counts,
    }
    for path in files:
        path.chmod(0o600)
    _write_json(folder / MANIFEST, manifest)
    return manifest


def database_counts(database: Path) -> dict[str, int]:
    # immutable: a WAL-mode file is read without creating -wal/-shm files beside it (the
    # folder is a backup: every file in it is listed in its manifest)
    conn = sqlite3.connect(f"file:{database}?mode=ro&immutable=1", uri=True)
    try:
        return count_contents(conn)
    finally:
        conn.close()


def _free_name(directory: Path, name: str) -> Path:
    candidate, n = directory / name, 1
    while candidate.exists() or (directory / f".{candidate.name}.partial").exists():
        n += 1
        candidate = directory / f"{name}-{n}"
    return candidate


def _file_entry(folder: Path, path: Path) -> dict[str, Any]:
    return {
        "name": path.relative_to(folder).as_posix(),
        "bytes": path.stat().st_size,
        "sha256": sha256_of(path),
    }


def _write_json(path: Path, document: dict[str, Any]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    path.chmod(0o600)


# --- checking a backup -----------------------------------------------------------------------


def verify(folder: Path) -> Backup:
    """Check a backup folder completely before anything is restored: the manifest, the
    format version, every file a regular file (no link, which could pull in any file of the
    machine) with its size and checksum, no file missing and none extra. Raises
    `BackupInvalid` naming every problem found."""
    if not folder.is_dir():
        raise BackupInvalid(folder, [f"{folder} is not a folder"])
    try:
        with open_regular(folder / MANIFEST) as handle:
            manifest = json.loads(handle.read().decode("utf-8"))
    except FileNotFoundError:
        raise BackupInvalid(folder, [f"{MANIFEST} is missing"]) from None
    except NotRegular as exc:
        raise BackupInvalid(
            folder, [f"{MANIFEST}: {exc.args[0]}; a backup holds only regular files"]
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BackupInvalid(folder, [f"{MANIFEST} is not valid JSON ({exc})"]) from None
    if not isinstance(manifest, dict):
        raise BackupInvalid(folder, [f"{MANIFEST} is not a JSON object"])
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise BackupInvalid(
            folder,
            [
                f"format_version {version!r} is not supported "
                f"(this version of Novaberg reads {FORMAT_VERSION})"
            ],
        )
    files = manifest.get("files")
    if not isinstance(files, list) or not all(_valid_entry(e) for e in files):
        raise BackupInvalid(folder, [f"{MANIFEST} has no valid file list"])
    listed = {entry["name"] for entry in files}
    problems = [f"{name} is not in the manifest" for name in REQUIRED_FILES if name not in listed]
    for entry in files:
        path = folder / entry["name"]
        try:
            info = path.lstat()
        except FileNotFoundError:
            problems.append(f"{entry['name']} is missing")
            continue
        if not stat.S_ISREG(info.st_mode):
            problems.append(
                f"{entry['name']} is {kind_of(info.st_mode)}: a backup holds "
                "only regular files (a link could pull in any file)"
            )
        elif info.st_size != entry["bytes"]:
            problems.append(
                f"{entry['name']} has {info.st_size} bytes, the manifest "
                f"says {entry['bytes']} (changed or cut short)"
            )
        elif _checksum(path) != entry["sha256"]:
            problems.append(
                f"{entry['name']}: checksum differs from the manifest "
                "(the file was changed or is damaged)"
            )
    for path in walk(folder):
        name = path.relative_to(folder).as_posix()
        if name == MANIFEST or name in listed:
            continue
        mode = path.lstat().st_mode
        if stat.S_ISREG(mode):
            problems.append(f"{name} is not in the manifest (extra file)")
        else:
            problems.append(
                f"{name} is {kind_of(mode)}: a backup holds only regular files "
                "(a link could pull in any file)"
            )
    if not isinstance(manifest.get("accounts_included", False), bool):
        problems.append(f"{MANIFEST}: accounts_included must be true or false")
    if problems:
        raise BackupInvalid(folder, problems)
    return Backup(folder, manifest)


def _checksum(path: Path) -> str | None:
    try:
        return sha256_of(path)
    except NotRegular:  # swapped for a link after it was looked at
        return None


def _valid_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("name"), str)
        and _valid_name(entry["name"])
        and isinstance(entry.get("bytes"), int)
        and isinstance(entry.get("sha256"), str)
    )


def _valid_name(name: str) -> bool:
    """A file at the top of the backup, or a path inside one of its data folders — never
    one that leads out of it (`..`, an absolute path, a backslash)."""
    if "\\" in name or name == MANIFEST:
        return False
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    return len(parts) == 1 or parts[0] in DATA_FOLDERS


# --- the backups in the data dir -------------------------------------------------------------


def list_backups(directory: Path) -> list[Backup]:
    """Complete backups in `directory`, newest first (a folder without a readable manifest
    is not listed)."""
    found: list[Backup] = []
    if not directory.is_dir():
        return found
    for path in directory.iterdir():
        if not path.name.startswith(BACKUP_PREFIX) or not path.is_dir():
            continue
        try:
            manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict):
            found.append(Backup(path, manifest))
    found.sort(key=lambda b: (str(b.manifest.get("created_at", "")), b.path.name), reverse=True)
    return found


def prune(directory: Path, keep: int) -> list[Path]:
    """Remove the oldest backups beyond `keep`, and partial folders left by a crash; returns
    what was removed."""
    removed = [b.path for b in list_backups(directory)[keep:]]
    cutoff = time.time() - PARTIAL_MAX_AGE_SECONDS
    if directory.is_dir():
        removed += [
            p
            for p in directory.iterdir()
            if p.name.startswith("." + BACKUP_PREFIX)
            and p.name.endswith(".partial")
            and p.stat().st_mtime < cutoff
        ]
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed


def made_on(backup: Backup, day: dt.date, zone: dt.tzinfo | None) -> bool:
    """True when the backup was made on the user's calendar `day` (zone None: the machine's)."""
    try:
        created = dt.datetime.fromisoformat(str(backup.manifest.get("created_at")))
    except ValueError:
        return False
    return local_moment(created.timestamp(), zone).date() == day
