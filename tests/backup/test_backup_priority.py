"""The backup yields the CPU to the serving loop (issue 24, item 18): its worker thread, and
the private redis-server it reads the snapshot from, run at a lower priority than the app's
event loop, so that on a busy machine the loop's thread is scheduled first. (How late the
loop wakes during a backup is the benchmark's: bench/backup.py.)"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import pytest

from app.backup import service
from app.core.background import LOW_PRIORITY_NICE
from app.storage.embedded_redis import EmbeddedRedis
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN

pytestmark = [pytest.mark.own_redis,  # the backup reads the app's own embedded Redis
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="per-thread priority is Linux's")]


def nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


async def test_the_backup_runs_below_the_loop(make_settings, aiohttp_client, monkeypatch,
                                              tmp_path):
    seen: dict[str, Any] = {}
    create = service.create_backup

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen["thread"] = threading.get_native_id()
        seen["backup"] = nice_of(seen["thread"])
        # A server started from this thread (as the snapshot's private one is) inherits it.
        private = EmbeddedRedis(tmp_path / "private", appendonly=False)
        private.start()
        try:
            seen["private"] = nice_of(private.process.pid)
        finally:
            private.stop()
        return create(*args, **kwargs)

    monkeypatch.setattr(service, "create_backup", watched)
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    loop_nice = nice_of(threading.get_native_id())
    first = await client.post("/api/backups", headers=AUTH)
    assert first.status == 201, await first.text()
    assert seen["backup"] == seen["private"] == min(loop_nice + LOW_PRIORITY_NICE, 19)
    assert nice_of(threading.get_native_id()) == loop_nice  # the loop's own is untouched
    thread = seen["thread"]
    second = await client.post("/api/backups", headers=AUTH)  # the same thread, lowered once
    assert second.status == 201 and seen["thread"] == thread
    assert seen["backup"] == min(loop_nice + LOW_PRIORITY_NICE, 19)
