"""The `novaberg` command: start the app (desktop or headless), manage users, back up,
restore, export and import (`app.backup.cli`), or import and export character cards
(`app.characters.cli`).

Every problem found before the server runs — a bad flag or setting, an unwritable data dir,
a taken port, an unreachable Redis — ends with one line on stderr and exit code 2, and
nothing written. One exception: a desktop start (without an explicit `--port`) on a data
dir that a running desktop app holds opens a tab on that app and exits 0
(`app.wiring.launch`).

One module: the entry point's parser and the commands it dispatches, each a short function.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import logging
import os
import signal
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

from aiohttp import web

from app import __version__
from app.auth.accounts import (
    add_user_sync,
    count_users_sync,
    delete_user_sync,
    list_tokens_sync,
    new_token,
    revoke_token_sync,
    valid_user_name,
)
from app.backup.cli import BACKUP_COMMANDS, add_backup_commands, run_backup_command
from app.characters.cli import (
    CHARACTER_COMMAND,
    add_character_commands,
    run_character_command,
)
from app.core import lanes
from app.core import log as logctx
from app.core.hosts import is_loopback
from app.core.lifetime import follow_bootloader
from app.core.settings import SETTINGS_BY_NAME, Settings, SettingsError, load_settings
from app.storage.connection import Connection
from app.storage.database import (
    connect,
    connect_postgres,
    is_postgres_url,
    open_store,
    redact_url,
)
from app.storage.datadir import (
    DATABASE_FILE,
    REDIS_DIR,
    DataDirError,
    DataDirInUse,
    DataDirLock,
    Instance,
    check_writable,
    remove_instance,
    write_instance,
)
from app.storage.embedded_redis import RedisStartError
from app.wiring.secret_args import secret_flags

log = logging.getLogger("app.wiring.cli")
T = TypeVar("T")

EXIT_USAGE = 2
REDIS_URL_SCHEMES = ("redis://", "rediss://", "unix://")


class UsageError(Exception):
    """A problem found before start-up; the CLI prints it and exits with code 2."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviations: with `--token` and `--token-file` beside a command's `--to`,
        # argparse read `backup --to DIR` as an ambiguous prefix of the top-level flags; a
        # flag is written out, as the help shows it.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="novaberg",
        description="Novaberg: a local, private AI companion. Starts the server and opens "
        "the chat in your browser (desktop mode), or runs headless as a server.",
        epilog="Every setting can also come from the environment (NOVABERG_<NAME>) or from "
        "config.toml in the data dir; see docs/settings.md.",
    )
    parser.add_argument("--version", action="version", version=f"novaberg {__version__}")
    parser.add_argument(
        "--headless", action="store_true", default=None, help=SETTINGS_BY_NAME["headless"].help
    )
    parser.add_argument("--host", help=SETTINGS_BY_NAME["host"].help)
    parser.add_argument("--port", type=int, help=SETTINGS_BY_NAME["port"].help)
    parser.add_argument("--data-dir", help=SETTINGS_BY_NAME["data_dir"].help)
    parser.add_argument("--redis-url", help=SETTINGS_BY_NAME["redis_url"].help)
    parser.add_argument(
        "--database-url",
        help=SETTINGS_BY_NAME["database_url"].help
        + " A password in it is visible to every local user (a warning says so): prefer "
        "NOVABERG_DATABASE_URL, PGPASSWORD or ~/.pgpass.",
    )
    parser.add_argument("--files-dir", help=SETTINGS_BY_NAME["files_dir"].help)
    parser.add_argument(
        "--token",
        help=SETTINGS_BY_NAME["token"].help
        + " Visible to every local user as an argument (a warning says so): prefer "
        "NOVABERG_TOKEN, secrets.toml or --token-file.",
    )
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="read the token from the first line of PATH (mode 0600; '-': from stdin)",
    )
    parser.add_argument(
        "--no-browser", action="store_true", default=None, help=SETTINGS_BY_NAME["no_browser"].help
    )
    parser.add_argument("--log-level", help=SETTINGS_BY_NAME["log_level"].help)
    parser.add_argument(
        "--log-format",
        choices=SETTINGS_BY_NAME["log_format"].choices,
        help=SETTINGS_BY_NAME["log_format"].help,
    )
    # The data options also after the subcommand ("novaberg user add anna --data-dir D");
    # SUPPRESS: given only before it, the value from before stays.
    data_options = _Parser(add_help=False)
    data_options.add_argument(
        "--data-dir", default=argparse.SUPPRESS, help=SETTINGS_BY_NAME["data_dir"].help
    )
    data_options.add_argument(
        "--redis-url", default=argparse.SUPPRESS, help=SETTINGS_BY_NAME["redis_url"].help
    )
    data_options.add_argument(
        "--database-url", default=argparse.SUPPRESS, help=SETTINGS_BY_NAME["database_url"].help
    )
    data_options.add_argument(
        "--files-dir", default=argparse.SUPPRESS, help=SETTINGS_BY_NAME["files_dir"].help
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    user = commands.add_parser("user", help="manage headless users")
    user_commands = user.add_subparsers(dest="user_command", metavar="ACTION", required=True)
    add = user_commands.add_parser(
        "add",
        parents=[data_options],
        help="add a user: asks for a password twice, prints an API token (the app must be stopped)",
    )
    add.add_argument("name", help="user name (a-z, 0-9, _ - .)")
    add.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of stdin",
    )
    delete = user_commands.add_parser(
        "delete",
        parents=[data_options],
        help="delete a user with all their data (the app must be stopped)",
    )
    delete.add_argument("name", help="user name")
    token = commands.add_parser("token", help="list or revoke API tokens")
    token_commands = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    listing = token_commands.add_parser(
        "list", parents=[data_options], help="list API tokens: id, user, created"
    )
    listing.add_argument("name", nargs="?", help="only this user's tokens")
    revoke = token_commands.add_parser(
        "revoke",
        parents=[data_options],
        help="revoke an API token by its id (the app must be stopped)",
    )
    revoke.add_argument("token_id", help="the id `token list` shows (at least 6 characters)")
    add_backup_commands(commands, parents=[data_options])
    add_character_commands(commands, parents=[data_options])
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    flags = {
        name: value
        for name, value in vars(args).items()
        if name in SETTINGS_BY_NAME and value is not None
    }
    try:
        flags = secret_flags(flags, args.token_file, sys.stdin)
        settings = load_settings(flags)
        if args.command == "user" and args.user_command == "delete":
            return delete_user(settings, args.name)
        if args.command == "user":
            return add_user(settings, args.name, args.password_stdin)
        if args.command == "token":
            return manage_tokens(
                settings,
                args.token_command,
                getattr(args, "name", None),
                getattr(args, "token_id", None),
            )
        if args.command in BACKUP_COMMANDS:
            return run_backup_command(settings, args)
        if args.command == CHARACTER_COMMAND:
            return run_character_command(settings, args)
        return serve(settings)
    except (SettingsError, UsageError, DataDirError) as exc:
        print(f"novaberg: {exc}", file=sys.stderr)
        return EXIT_USAGE


# --- user add, token list | revoke, user delete ----------------------------------------------

# A command that writes to the data dir's SQLite holds the data dir's lock, as a running app
# does: beside a running app it refuses (one line, exit 2), and no app starts while it writes.
# On PostgreSQL (`database_url`) the store is shared by every process of the install: the
# data dir's lock guards nothing there, so the command writes beside running processes, and
# the database keeps them apart — each command one transaction, the unique keys decide a race
# (two `user add` of one name: one user, and the other command says it exists). Its writes go
# through the database's one writer (`Database.execute_write_fn`, migrations applied on open),
# as the app's do.


@contextmanager
def _store_owned(settings: Settings, *, needs_data_dir: bool = False) -> Iterator[None]:
    """The right to write the store: the data dir's lock for its SQLite (or when the command
    uses the data dir itself, `needs_data_dir`: its embedded Redis); nothing on PostgreSQL."""
    if settings.database_url and not needs_data_dir:
        yield
        return
    lock = DataDirLock(settings.data_path)
    try:
        lock.acquire()
    except DataDirInUse as exc:
        raise UsageError(f"{exc}: stop the app first") from None
    try:
        yield
    finally:
        lock.release()


def _write(settings: Settings, fn: Callable[[sqlite3.Connection], T]) -> T:
    """`fn(conn)` through the database's writer, in one transaction; the caller owns the
    store (`_store_owned`)."""

    async def run() -> T:
        database = open_store(settings.data_path, settings.database_url, DATABASE_FILE)
        try:
            await database.open()
            return await database.execute_write_fn(fn)
        finally:
            await database.close()

    return asyncio.run(run())


def _require_database(settings: Settings) -> None:
    if not settings.database_url and not (settings.data_path / DATABASE_FILE).exists():
        raise UsageError(f"no database in {settings.data_path} (no users yet)")


@contextlib.contextmanager
def _store_reader(settings: Settings) -> Iterator[Any]:
    """A read-only connection to the settings' store (PostgreSQL, or the data dir's SQLite;
    None when that file does not exist)."""
    conn: Connection
    if settings.database_url:
        conn = connect_postgres(settings.database_url, readonly=True)
    elif (settings.data_path / DATABASE_FILE).exists():
        conn = connect(settings.data_path / DATABASE_FILE, readonly=True)
    else:
        yield None
        return
    try:
        yield conn
    finally:
        conn.close()


def add_user(settings: Settings, name: str, password_stdin: bool) -> int:
    if not valid_user_name(name):
        raise UsageError(
            f"invalid user name {name!r}: use 1-64 of a-z 0-9 _ - . ('local' is reserved)"
        )
    with _store_owned(settings):
        password = _read_password(password_stdin)
        try:
            token = _write(settings, lambda conn: add_user_sync(conn, name, password))
        except sqlite3.IntegrityError:
            raise UsageError(f"user {name!r} already exists") from None
    print(f"user {name} added; API token (shown once): {token}")
    return 0


def manage_tokens(settings: Settings, action: str, name: str | None, token_id: str | None) -> int:
    _require_database(settings)
    if action == "list":  # reads only: also beside a running app
        with _store_reader(settings) as conn:
            try:
                tokens = list_tokens_sync(conn, name)
            except sqlite3.OperationalError:  # a database no app has opened yet: no tables
                tokens = []
        for tid, user, created in tokens:
            stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(created))
            print(f"{tid}  {user}  {stamp}")
        return 0
    assert token_id is not None
    with _store_owned(settings):
        matched = _write(settings, lambda conn: revoke_token_sync(conn, token_id))
    if matched != 1:
        raise UsageError(
            f"token id {token_id!r} matches {matched} tokens; give a longer id "
            "from 'novaberg token list'"
            if matched
            else f"no token with id {token_id!r} (see 'novaberg token list')"
        )
    print(f"token {token_id} revoked")
    return 0


def delete_user(settings: Settings, name: str) -> int:
    """The user, their tokens and rows in the store, and everything Redis holds of them. With
    the embedded Redis the app must be stopped (the data dir lock says so): its embedded
    Redis is started here. On PostgreSQL with an external Redis it runs beside the
    processes: the user's sessions there are purged, so no process lets them in again."""
    from app.memory.purge import purge_user

    with _store_owned(settings, needs_data_dir=not settings.redis_url):
        _require_database(settings)
        if not _write(settings, lambda conn: delete_user_sync(conn, name)):
            raise UsageError(f"no user {name!r}")
        from app.storage.redis_driver import client as redis_client

        if settings.redis_url:
            client = redis_client(settings.redis_url)
            try:
                keys_removed = purge_user(client, name)
            finally:
                client.close()
        else:
            from app.storage.embedded_redis import EmbeddedRedis

            embedded = EmbeddedRedis(settings.data_path / REDIS_DIR, settings.redis_appendfsync)
            embedded.start()
            client = redis_client(embedded.url)
            try:
                keys_removed = purge_user(client, name)
            finally:
                client.close()
                embedded.stop()
    print(f"user {name} deleted ({keys_removed} Redis keys of theirs removed)")
    return 0


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise UsageError("the two passwords differ")
    if len(password) < 8:
        raise UsageError("the password needs at least 8 characters")
    return password


# --- serve -----------------------------------------------------------------------------------


def serve(settings: Settings) -> int:
    follow_bootloader()
    text = settings.log_format == "text" or (
        settings.log_format == "auto" and not settings.headless
    )
    level = settings.log_level
    if text and settings.source("log_level") == "default":
        level = "warning"  # the desktop terminal stays quiet: the start URL and what is wrong
    logctx.configure(level, sys.stdout if settings.headless else sys.stderr, text=text)
    _check_redis_url(settings.redis_url)
    _check_database_url(settings.database_url)
    check_writable(settings.data_path)
    if not settings.headless and settings.source("port") == "default":
        from app.wiring.launch import open_running

        if open_running(settings):  # an app runs on this data dir: a tab on it is open now
            return 0
    if not settings.headless and settings.host != "127.0.0.1":
        log.warning("desktop mode binds 127.0.0.1; --host is used with --headless only")
        settings = settings.replace(host="127.0.0.1")
    if settings.headless:
        _refuse_open_server_without_users(settings)
    sock = bind_socket(settings)
    port = sock.getsockname()[1]
    token = settings.token or (None if settings.headless else new_token())
    from app.wiring.server import create_app

    app = create_app(settings.replace(port=port), local_token=token)
    try:
        return lanes.run(_run(app, sock, settings, token))
    except (DataDirError, RedisStartError, OSError) as exc:
        raise UsageError(str(exc)) from None


def _check_database_url(url: str | None) -> None:
    """A `--database-url` that is no PostgreSQL URL, or one whose driver is missing, stops
    the start with exit code 2 (the server's own refusal comes from the first connection)."""
    if url is None:
        return
    if not is_postgres_url(url):
        raise UsageError(f"--database-url {redact_url(url)!r}: expected postgresql://")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise UsageError("--database-url needs psycopg: pip install 'novaberg[postgres]'") from None


def _check_redis_url(url: str | None) -> None:
    """An external Redis must answer before anything is written to the data dir."""
    if url is None:
        return
    shown = redact_url(url)
    if not url.startswith(REDIS_URL_SCHEMES):
        raise UsageError(f"--redis-url {shown!r}: expected redis://, rediss:// or unix://")
    import redis

    from app.storage.redis_driver import client as redis_client

    try:
        client = redis_client(url, socket_connect_timeout=3, socket_timeout=3)
        client.ping()
        client.close()
    except (ValueError, redis.RedisError) as exc:
        raise UsageError(f"--redis-url {shown!r}: cannot reach Redis: {exc}") from None


def _refuse_open_server_without_users(settings: Settings) -> None:
    if is_loopback(settings.host) or settings.token:
        return
    users = 0
    with _store_reader(settings) as conn:
        if conn is not None:
            try:
                users = count_users_sync(conn)
            except sqlite3.OperationalError:
                users = 0
    if users == 0:
        raise UsageError(
            f"refusing to serve {settings.host} with no users: add one with "
            "'novaberg user add NAME' (or set --token)"
        )


def bind_socket(settings: Settings) -> socket.socket:
    """Bind the listening socket before anything is written. An explicit port is binding;
    the default port falls back to a free one in desktop mode."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    explicit = settings.source("port") != "default"
    for port in (settings.port, 0):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((settings.host, port))
        except OSError as exc:
            sock.close()
            if port == 0 or explicit or settings.headless:
                raise UsageError(f"cannot bind {settings.host}:{port}: {exc.strerror}") from None
            continue
        sock.listen(1024)
        sock.setblocking(False)
        return sock
    raise AssertionError("unreachable")


async def _run(
    app: web.Application, sock: socket.socket, settings: Settings, token: str | None
) -> int:
    from app.api.app_keys import AUTH
    from app.api.front_line import FrontLineRunner

    stop = _stop_on_signals()  # from the very start: a SIGTERM during start-up stops cleanly
    # FrontLineRunner: a request aiohttp cannot parse is answered in the app's error shape.
    runner = FrontLineRunner(app, handle_signals=False, access_log=None)
    try:
        await runner.setup()
    except BaseException:
        await runner.cleanup()
        raise
    try:
        await web.SockSite(runner, sock).start()
        port = sock.getsockname()[1]
        base = f"http://{'127.0.0.1' if not settings.headless else settings.host}:{port}"
        log.info(
            "listening",
            extra=logctx.fields(url=base, headless=settings.headless, data_dir=settings.data_dir),
        )
        # For a second start on this data dir (app.wiring.launch): where this app is, and
        # in desktop mode the secret that asks it for a start link.
        write_instance(
            settings.data_path,
            Instance(
                os.getpid(),
                base,
                "headless" if settings.headless else "desktop",
                None if settings.headless else app[AUTH].launch.value,
            ),
        )
        if not settings.headless:
            # Start links carry single-use codes, never the API token: the browser's command
            # line (visible in `ps`) gets a code of its own, used up by the time anyone reads it.
            from app.wiring.launch import open_browser_or_say, start_lines

            codes = app[AUTH].start_codes
            assert token is not None  # not headless: `settings.token or new_token()` gave one
            # One write call: the log listener thread writes to the same stream.
            sys.stderr.write(start_lines(f"{base}/?token={codes.issue()}", token))
            sys.stderr.flush()
            if not settings.no_browser:
                # A daemon thread: some browser commands block until the browser closes, and
                # neither serving nor stopping may wait for that.
                threading.Thread(
                    target=open_browser_or_say,
                    args=(f"{base}/?token={codes.issue()}",),
                    daemon=True,
                    name="open-browser",
                ).start()
        await stop.wait()
        log.info("stopping")
    finally:
        remove_instance(settings.data_path, os.getpid())
        await runner.cleanup()
    return 0


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
