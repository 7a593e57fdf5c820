"""Smoke test of the one-file binary (`make binary-test` builds it first)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.procs import ROOT, AppProcess, http, live_pids, redis_pids, wait_for

pytestmark = pytest.mark.binary
BINARY = ROOT / "dist" / "novaberg"


def processes_running(executable: Path) -> list[int]:
    return live_pids(lambda proc, _: Path(os.readlink(proc / "exe")) == executable)


def test_binary_serves_and_stops_without_leftovers(tmp_path):
    assert BINARY.exists(), "run `make binary` first"
    bundle_before = BINARY.stat().st_mtime
    data = tmp_path / "fresh-data"
    app = AppProcess(data, command=[str(BINARY)]).start()
    try:
        status, health = app.get("/api/health")  # the admin: with the versions
        assert status == 200 and health["redis"]["embedded"] is True
        assert app.get("/api/me")[1]["user_id"] == "local"
        assert http("GET", app.url + "/api/me")[0] == 401
        import urllib.request

        with urllib.request.urlopen(app.url + "/", timeout=5) as response:
            assert b"<html" in response.read().lower()
        assert redis_pids(data / "redis" / "redis.sock")
    finally:
        code = app.stop()
    assert code == 0
    assert wait_for(lambda: processes_running(BINARY.resolve()) == [])
    assert redis_pids(data / "redis" / "redis.sock") == []
    # It wrote into the data dir it was given, not into its bundle or the working dir.
    assert (data / "novaberg.sqlite3").exists() and (data / "redis" / "appendonly.aof").exists()
    assert BINARY.stat().st_mtime == bundle_before


def test_kill_9_of_the_bootloader_ends_app_and_redis(tmp_path):
    """The one-file bootloader runs the app as its child; killing it must not orphan it."""
    data = tmp_path / "data"
    app = AppProcess(data, command=[str(BINARY)]).start()
    sock = data / "redis" / "redis.sock"
    assert redis_pids(sock)
    app.kill()  # SIGKILL to the bootloader only
    assert wait_for(lambda: processes_running(BINARY.resolve()) == [] and redis_pids(sock) == [])
    # The app shut down cleanly (SIGTERM from the death signal): the next start is healthy.
    again = AppProcess(data, command=[str(BINARY)]).start()
    assert again.stop() == 0
