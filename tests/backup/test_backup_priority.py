"""The backup yields the CPU to the serving loop without keeping it waiting (issue 24, item
18): the private redis-server that reads and encodes the snapshot runs at a lower priority;
the backup's worker thread does not — it shares the GIL with the event loop, and a lowered
thread preempted while it holds the GIL keeps the loop waiting. (How late the loop wakes
during a backup is the benchmark's: bench/backup.py.)"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from app.backup import redis_snapshot, service
from app.backup.redis_snapshot import SNAPSHOT_SERVER_NICE
from app.storage import embedded_redis
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN

pytestmark = [pytest.mark.own_redis,  # the backup reads the app's own embedded Redis
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="per-thread priority is Linux's")]


def nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


async def test_the_snapshot_server_runs_below_the_loop_and_the_thread_beside_it(
        make_settings, aiohttp_client, monkeypatch):
    seen: dict[str, Any] = {}
    create, private_snapshot = service.create_backup, redis_snapshot.write_private_snapshot

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen["thread"] = threading.get_native_id()
        seen["backup"] = nice_of(seen["thread"])
        return create(*args, **kwargs)

    def reading(client: Any, *args: Any, **kwargs: Any) -> Any:
        socket = client.connection_pool.connection_kwargs["path"]
        pid = int((Path(socket).parent / "redis.pid").read_text())
        assert embedded_redis._is_our_redis(pid, Path(socket))
        seen["private"] = nice_of(pid)
        return private_snapshot(client, *args, **kwargs)

    monkeypatch.setattr(service, "create_backup", watched)
    monkeypatch.setattr(redis_snapshot, "write_private_snapshot", reading)
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    loop_nice = nice_of(threading.get_native_id())
    first = await client.post("/api/backups", headers=AUTH)
    assert first.status == 201, await first.text()
    assert seen["private"] == min(loop_nice + SNAPSHOT_SERVER_NICE, 19)
    assert seen["backup"] == loop_nice  # the thread that shares the GIL is not lowered
    assert nice_of(threading.get_native_id()) == loop_nice  # nor is the loop's own
    assert (await client.post("/api/backups", headers=AUTH)).status == 201
    assert seen["backup"] == loop_nice
