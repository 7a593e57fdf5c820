"""Backups from the running app: one at a time, off the event loop, and once a day.

`BackupService.create` runs `archive.create_backup` on a worker thread of its own with a Redis
connection of its own (the app's asyncio client stays free). The thread holds the GIL as
little as it can, since every moment it does is the loop's lag: the database is copied by
SQLite's backup API and hashed by hashlib (both release the GIL), and the Redis snapshot is
written by a private redis-server that walks its keys and encodes the lines itself
(`redis_snapshot.write_private_snapshot`), at a lower priority
(`redis_snapshot.SNAPSHOT_SERVER_NICE`). The thread keeps the normal priority: lowered, it
would be preempted while holding the GIL, and the loop would wait for it.
`daily_loop` takes the automatic backup (`backup_daily`): `backup_daily_delay` seconds after
start and then hourly (the `daily` ticker; a failed look is logged and the next hour tries
again) it looks whether the data dir has a backup from today (the user's calendar day) and
takes one if not. The wiring (`app.wiring.server.backup_ctx`) runs the loop with
the app.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import threading
import time

from app.backup import redis_snapshot
from app.backup.access import redis_dir
from app.backup.archive import (
    BACKUPS_DIR,
    Backup,
    BackupError,
    create_backup,
    list_backups,
    made_on,
    prune,
)
from app.core import log as logctx
from app.core.background import Ticker
from app.core.clock import local_moment, zone_named
from app.core.refusal import RefusedKind
from app.core.settings import Settings

log = logging.getLogger(__name__)

DAILY_CHECK_SECONDS = 3600.0


class BackupBusy(RefusedKind, BackupError):
    """A backup is being taken already: 409 `backup_running`."""

    STATUS, CODE = 409, "backup_running"


class BackupService:
    def __init__(self, settings: Settings, redis_url: str) -> None:
        """`redis_url`: the Redis in use (the setting's, or the embedded one the wiring
        started)."""
        self.settings = settings
        self.directory = settings.data_path / BACKUPS_DIR
        self.embedded_redis_dir = None if settings.redis_url else redis_dir(settings.data_path)
        self.redis_url = redis_url
        self._lock = asyncio.Lock()
        self._stopping = threading.Event()
        self._running: asyncio.Future[Backup] | None = None
        self._worker = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="backup"
        )
        self.daily: Ticker[str] = Ticker(
            "daily-backup",
            self.take_daily,
            interval=DAILY_CHECK_SECONDS,
            first_delay=settings.backup_daily_delay,
            logger=log,
        )

    async def create(self, *, reason: str) -> Backup:
        """Take a backup into the data dir and prune old ones; `BackupBusy` while one runs."""
        if self._lock.locked():
            raise BackupBusy("a backup is being taken right now; try again when it is done")
        async with self._lock:
            start = time.perf_counter()
            run = contextvars.copy_context().run  # the log context goes along
            self._running = asyncio.get_running_loop().run_in_executor(
                self._worker, run, self._create_sync
            )
            try:
                backup = await asyncio.shield(self._running)
            except Exception as exc:
                log.warning("backup failed", extra=logctx.fields(reason=reason, error=str(exc)))
                raise
            finally:
                self._running = None
            summary = backup.summary()
            log.info(
                "backup made",
                extra=logctx.fields(
                    reason=reason,
                    name=summary.name,
                    bytes=summary.bytes,
                    ms=logctx.monotonic_ms(start),
                    **summary.counts,
                ),
            )
            return backup

    def _create_sync(self) -> Backup:
        client = redis_snapshot.connect(self.redis_url)
        try:
            backup = create_backup(
                self.settings.data_path,
                client,
                self.directory,
                embedded_redis_dir=self.embedded_redis_dir,
                should_stop=self._stopping.is_set,
                database_url=self.settings.database_url,
                files_path=self.settings.files_path,
            )
        finally:
            client.close()
        for path in prune(self.directory, self.settings.backup_keep):
            log.info(
                "old backup removed",
                extra=logctx.fields(
                    name=path.name, setting="backup_keep", keep=self.settings.backup_keep
                ),
            )
        return backup

    async def list(self) -> list[Backup]:
        return await asyncio.to_thread(list_backups, self.directory)

    async def has_backup_of_today(self) -> bool:
        zone = zone_named(self.settings.timezone)
        today = local_moment(time.time(), zone).date()
        return any(made_on(b, today, zone) for b in await self.list())

    async def daily_loop(self) -> None:
        """Take today's backup if there is none, every `DAILY_CHECK_SECONDS`; runs in the
        caller's task until it is cancelled."""
        await self.daily.run()

    async def take_daily(self) -> str:
        """One look of the daily loop; returns what it found or made."""
        if await self.has_backup_of_today():
            return "today's exists"
        try:
            backup = await self.create(reason="daily")
        except BackupBusy:
            return "being taken"  # someone is taking one right now: that is today's
        return backup.path.name

    async def close(self) -> None:
        """Stop a backup in flight (it removes its partial folder) and wait for its thread."""
        self._stopping.set()
        running = self._running
        if running is not None:
            with contextlib.suppress(Exception):  # cancelled or failed: its folder is gone
                await running
        self._worker.shutdown(wait=False)
