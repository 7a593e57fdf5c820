"""`novaberg backup | restore | export | import | import-diary`: the command-line side of
app/backup.

Exit codes: 0 done; 1 the restore was declined or failed half-way (the message says how to
get back); 2 refused before anything changed (a damaged or foreign backup, an app running on
the data dir for restore/import, a bad argument).

One module: the command line of one room, one short function per command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from app.backup.access import open_data_dir, redis_dir, redis_of, redis_url_of
from app.backup.archive import (
    BACKUPS_DIR,
    BackupError,
    BackupInvalid,
    create_backup,
    database_path,
    prune,
)
from app.backup.chat_export import ChatExporter, Kept, on_redis, with_parts
from app.backup.database import table_exists
from app.backup.diary_formats import Limits, read_folder, read_upload
from app.backup.diary_import import (
    ImportTooLarge,
    attach_photos,
    check_photo_budget,
    import_diary,
)
from app.backup.exports import ExportError, ExportQuery, ImportTarget, make_query, stream
from app.backup.registry import EXPORTERS, exporter_for_document, exporter_named
from app.backup.restore import RestoreDeclined, RestoreFailed, restore
from app.core.clock import zone_named
from app.core.i18n import LANGUAGES
from app.core.settings import Settings
from app.storage.connection import Connection
from app.storage.database import connect_postgres, redact_url
from app.storage.datadir import DataDirInUse
from app.storage.files import NotRegular, open_regular, private_file
from app.storage.migrations import MIGRATIONS_TABLE

BACKUP_COMMANDS = ("backup", "restore", "export", "import", "import-diary")
EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2


def add_backup_commands(commands: Any, parents: Sequence[Any] = ()) -> None:
    """`parents`: the data options, so they may also follow the subcommand."""
    backup = commands.add_parser(
        "backup",
        parents=list(parents),
        help="back up the data (works while the app runs); never secrets: no "
        "passwords, tokens or API keys unless --include-accounts",
        description="Write a backup folder novaberg-backup-<UTC time>/ with the database "
        "(SQLite backup API), a snapshot of the Redis keys (sessions, state, "
        "queues, lists, reminders, turn records) and manifest.json with checksums. "
        "A backup NEVER holds secrets: no API keys, no settings file, no login "
        "sessions, and no accounts (password hashes and API tokens) unless you "
        "give --include-accounts.",
    )
    backup.add_argument(
        "--to",
        metavar="DIR",
        help="folder to write the backup into (default: backups/ in the data "
        "dir, where only the newest backup_keep are kept)",
    )
    backup.add_argument(
        "--include-accounts",
        action="store_true",
        help="a full backup: ALSO the user accounts with their password "
        "hashes and API token hashes. Keep such a backup private.",
    )
    restore_cmd = commands.add_parser(
        "restore",
        parents=list(parents),
        help="replace the data with a backup (the app must not be running)",
        description="Check the backup (manifest, format version, every checksum), then show "
        "what will be replaced and ask. The current data is first moved into a "
        "safety backup restore-safety-<UTC time>/ in the data dir; going back is "
        "another restore of that folder. Refused while an app runs on the data "
        "dir (exit 2).",
    )
    restore_cmd.add_argument("folder", metavar="DIR", help="the backup folder")
    restore_cmd.add_argument("--yes", action="store_true", help="do not ask")
    export = commands.add_parser(
        "export",
        parents=list(parents),
        help="export a conversation (or other data) as Markdown or JSON",
        description="Export from the data dir (also while the app runs). A JSON export can be "
        "imported into another install with 'novaberg import'.",
    )
    export.add_argument("kind", choices=sorted(EXPORTERS), help="what to export")
    export.add_argument("--user", default="local", help="whose data (default: local)")
    export.add_argument("--character", help="only this character (default: all)")
    export.add_argument(
        "--from", dest="start", metavar="YYYY-MM-DD", help="first calendar day (default: the first)"
    )
    export.add_argument(
        "--to", dest="end", metavar="YYYY-MM-DD", help="last calendar day (default: the last)"
    )
    export.add_argument("--format", choices=("md", "json"), default="md")
    export.add_argument(
        "--out",
        metavar="FILE",
        help="write to FILE (default: stdout); for a "
        "journal export an existing folder gets one file per entry",
    )
    export.add_argument(
        "--language",
        choices=LANGUAGES,
        help="the words of a Markdown "
        "export in this language (default: the neutral form, dates as "
        "YYYY-MM-DD)",
    )
    import_cmd = commands.add_parser(
        "import",
        parents=list(parents),
        help="import a JSON export (the app must not be running)",
        description="Import a JSON export of Novaberg into this data dir. Items keep their ids; "
        "an item already here is skipped, so importing twice adds nothing. While "
        "the app runs, import from its settings (Backup) instead.",
    )
    import_cmd.add_argument("file", metavar="FILE", help="the JSON export")
    import_cmd.add_argument("--user", default="local", help="whose data (default: local)")
    diary = commands.add_parser(
        "import-diary",
        parents=list(parents),
        help="import a diary you already have as journal entries (the app must not be running)",
        description="Import Day One's export (the .json, or the .zip Day One writes) or a "
        "folder of Markdown files, one per day (the day from the file name "
        "YYYY-MM-DD.md or front matter `date:`), as journal entries. Entries of "
        "the same day become one entry; importing twice adds nothing; a bad file "
        "names its first bad entry and nothing is written. Photos are found and "
        "listed but not imported yet. While the app runs, import in the journal "
        "page instead.",
    )
    diary.add_argument(
        "path",
        metavar="PATH",
        help="Day One's .json or .zip, a zip of Markdown files, a folder of them, or one .md file",
    )
    diary.add_argument("--user", default="local", help="whose journal (default: local)")


def run_backup_command(settings: Settings, args: argparse.Namespace) -> int:
    try:
        if args.command == "backup":
            return _backup(settings, args.to, args.include_accounts)
        if args.command == "restore":
            return _restore(settings, Path(args.folder), args.yes)
        if args.command == "export":
            return _export(settings, args)
        if args.command == "import-diary":
            return _import_diary(settings, Path(args.path), args.user)
        return _import(settings, Path(args.file), args.user)
    except BackupInvalid as exc:
        _err(f"{exc.folder} cannot be restored, nothing was changed:")
        for problem in exc.problems:
            _err(f"  - {problem}")
        return EXIT_REFUSED
    except DataDirInUse as exc:
        _err(str(exc))
        return EXIT_REFUSED
    except (BackupError, ExportError, ImportTooLarge) as exc:
        _err(str(exc))
        return EXIT_REFUSED
    except RestoreDeclined as exc:
        _err(str(exc))
        return EXIT_FAILED
    except RestoreFailed as exc:
        _err(str(exc))
        return EXIT_FAILED


def _err(line: str) -> None:
    print(f"novaberg: {line}", file=sys.stderr)


def _backup(settings: Settings, to: str | None, include_accounts: bool) -> int:
    if not settings.database_url and not database_path(settings.data_path).exists():
        raise BackupError(f"no Novaberg data in {settings.data_path}: nothing to back up")
    target = Path(to).expanduser().resolve() if to else settings.data_path / BACKUPS_DIR
    with (
        open_data_dir(settings.data_path) as busy,
        redis_of(settings, app_running=busy is not None) as client,
    ):
        backup = create_backup(
            settings.data_path,
            client,
            target,
            embedded_redis_dir=None if settings.redis_url else redis_dir(settings.data_path),
            include_accounts=include_accounts,
            database_url=settings.database_url,
            files_path=settings.files_path,
        )
    if to is None:
        prune(target, settings.backup_keep)
    counts = backup.manifest["counts"]
    print(f"backup written: {backup.path}")
    print("  " + ", ".join(f"{name} {value}" for name, value in counts.items()))
    if include_accounts:
        print("  it holds the accounts (password and token hashes): keep it private")
    return EXIT_OK


def _restore(settings: Settings, folder: Path, yes: bool) -> int:
    def confirm(question: str) -> bool:
        print(question, end=" " if yes else " [y/N] ")
        if yes:
            print("yes (--yes)")
            return True
        try:
            return input().strip().lower() in ("y", "yes", "j", "ja")
        except EOFError:
            return False

    restore(settings, folder.expanduser().resolve(), confirm=confirm)
    return EXIT_OK


def _export(settings: Settings, args: argparse.Namespace) -> int:
    path = database_path(settings.data_path)
    where = redact_url(settings.database_url) if settings.database_url else settings.data_path
    nothing = f"no Novaberg data in {where}: nothing to export"
    if not settings.database_url and not path.exists():
        raise BackupError(nothing)
    zone = zone_named(settings.timezone)
    exporter = exporter_named(args.kind)
    query = make_query(args.user, args.character, args.start, args.end, zone)
    out = Path(args.out) if args.out else None
    conn = (
        connect_postgres(settings.database_url, readonly=True)
        if settings.database_url
        else sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    )
    try:
        # A store no Novaberg has set up (an empty PostgreSQL database, an empty file) has
        # no tables to read: the same refusal as no database at all, not a traceback.
        if not table_exists(conn, MIGRATIONS_TABLE):
            raise BackupError(nothing)
        kept = _kept_of(settings, exporter, query) if isinstance(exporter, ChatExporter) else None
        if out is not None and out.is_dir() and not out.is_symlink():
            return _export_files(
                exporter, conn, query, out, args.format, args.language, settings.files_path
            )
        chunks = stream(exporter, conn, query, args.format, args.language, kept)
        if out is None:
            sys.stdout.flush()
            for chunk in chunks:
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.write(b"\n" if args.format == "json" else b"")
            sys.stdout.flush()
            return EXIT_OK
        with _written(out) as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.write(b"\n" if args.format == "json" else b"")
    finally:
        conn.close()
    print(f"export written to {out}", file=sys.stderr)
    return EXIT_OK


def _kept_of(settings: Settings, exporter: ChatExporter, query: ExportQuery) -> Kept:
    """The lists and reminders a chat export carries, from the running app's Redis or from
    the data dir's own (started here, and stopped again, when no app runs)."""
    from app.characters.book import CharacterBook

    defined = [character.id for character in CharacterBook(settings).all(query.user_id)]

    async def collect(redis: Any) -> Kept:
        return await exporter.collect_kept(
            redis, query, await exporter.kept_characters(redis, query, defined)
        )

    with (
        open_data_dir(settings.data_path) as busy,
        redis_url_of(settings, app_running=busy is not None) as url,
    ):
        return asyncio.run(on_redis(url, collect))


def _export_files(
    exporter: Any,
    conn: Connection,
    query: ExportQuery,
    folder: Path,
    fmt: str,
    language: str | None,
    data_path: Path,
) -> int:
    """`--out` names a folder: one file per item, where the exporter offers that, each
    written as it is read; a journal entry's photos in its own folder `<date>/`."""
    split = getattr(exporter, "files", None)
    if split is None:
        raise ExportError(
            f"--out {folder} is a folder: one file per item is offered for "
            "journal exports; give a file name"
        )
    written = 0
    for name, body in split(conn, query, fmt, language, data_path=data_path):
        target = folder / name
        if isinstance(body, Path):  # an entry's photo, copied from the data dir
            _private_folder(target.parent)
            with _written(target) as handle, _source(body) as source:
                shutil.copyfileobj(source, handle)
        else:
            with _written(target) as handle:
                handle.write(body.encode())
        written += 1
    print(f"{written} files written to {folder}", file=sys.stderr)
    return EXIT_OK


@contextlib.contextmanager
def _written(path: Path) -> Iterator[BinaryIO]:
    """An export file written only for its owner (0600), never through a link."""
    try:
        with private_file(path) as handle:
            yield handle
    except NotRegular as exc:
        raise ExportError(f"--out: {exc}: an export is not written through it") from None
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror}") from None


def _private_folder(path: Path) -> None:
    """An entry's folder in the export folder (0700), refused when it is a link."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror}") from None
    if path.is_symlink() or not path.is_dir():
        what = "a symbolic link" if path.is_symlink() else "not a folder"
        raise ExportError(f"--out: {path} is {what}: an export is not written through it")


@contextlib.contextmanager
def _source(path: Path) -> Iterator[BinaryIO]:
    """A stored photo opened for copying, never through a link."""
    try:
        with open_regular(path) as handle:
            yield handle
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def _locked_database(settings: Settings, in_app: str) -> Iterator[Connection]:
    """The store, migrated, for an import to write (in its own transaction), under the data
    dir's lock: refused while an app runs (`in_app`: where to import then)."""
    from app.storage.database import connect
    from app.storage.migrations import apply_migrations

    with open_data_dir(settings.data_path) as busy:
        if busy:
            raise DataDirInUse(f"{busy}: {in_app}, or stop the app first")
        conn = (
            connect_postgres(settings.database_url)
            if settings.database_url
            else connect(database_path(settings.data_path))
        )
        try:
            apply_migrations(conn)
            yield conn
        finally:
            conn.close()


def _import(settings: Settings, file: Path, user_id: str) -> int:
    from app.characters.book import CharacterBook

    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ExportError(f"cannot read {file}: {exc.strerror}") from None
    exporter = exporter_for_document(raw)
    # A chat export's lists and reminders are checked with the rest before anything is written.
    target = ImportTarget(user_id, {c.id for c in CharacterBook(settings).all(user_id)})
    chat = exporter if isinstance(exporter, ChatExporter) else None
    kept = chat.read_kept(raw, target) if chat is not None else None
    with _locked_database(settings, "import in the app's settings (Backup)") as conn:
        with conn:
            result = exporter.import_document(conn, target, raw)
        answer = result
        if chat is not None and kept is not None and (kept.lists or kept.reminders):
            with redis_url_of(settings, app_running=False) as url:
                answer = with_parts(
                    result,
                    asyncio.run(
                        on_redis(url, lambda redis: chat.import_kept(redis, user_id, kept))
                    ),
                )
    print(f"imported {answer.imported}, skipped {answer.skipped} already present ({answer.kind})")
    parts = answer.parts if isinstance(answer.parts, dict) else {}
    for part, counts in parts.items():
        print(f"  {part}: imported {counts.imported}, skipped {counts.skipped}")
    return EXIT_OK


def _import_diary(settings: Settings, path: Path, user_id: str) -> int:
    limits = Limits(settings.import_max_bytes, zone_named(settings.timezone))
    if path.is_dir():
        diary = read_folder(path, limits)
    else:
        try:
            if path.stat().st_size > limits.max_bytes:
                raise ExportError(
                    f"{path} has more than {limits.max_bytes} bytes (setting import_max_bytes)"
                )
            raw = path.read_bytes()
        except OSError as exc:
            raise ExportError(f"cannot read {path}: {exc.strerror}") from None
        diary = read_upload(raw, limits, path.name)
    check_photo_budget(diary, user_id)
    target = ImportTarget(user_id, ())
    from app.journal.media import add_media_sync

    with _locked_database(settings, "import the diary in the journal page") as conn:
        with conn:
            result = import_diary(conn, target, diary, max_chars=settings.max_message_chars)

        async def add(entry_id: str, name: str, data: bytes) -> object:
            with conn:  # each photo in its own transaction, after the entries' commit
                return add_media_sync(conn, settings, user_id, entry_id, name, data)

        asyncio.run(attach_photos(result, diary, add))
    print(
        f"imported {result.imported}, skipped {result.skipped} already present "
        f"({diary.source}; {len(result.entries)} new entries)"
    )
    if result.photos.imported:
        print(f"  {result.photos.imported} photos imported")
    for note in result.notes("en"):
        print(f"  {note}")
    return EXIT_OK
