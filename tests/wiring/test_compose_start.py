"""docs/deploy.md's scale-out start, as its compose example runs it (issue 26 item 6): processes
configured by the environment alone (`NOVABERG_REDIS_URL`, `NOVABERG_DATABASE_URL`,
`NOVABERG_PUBLIC_ORIGIN`, `NOVABERG_FILES_DIR`), each with a data dir of its own, serving
`0.0.0.0`. Before the first user a process refuses in one line; after `user add` run with the
same environment, every process serves the user: a login on one, a message sent through
another, its answer on the first one's WebSocket and in its history.

Only under `--engine=postgresql` (`make test-postgres`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from tests.procs import ROOT, clean_env, free_port, http, wait_for

pytestmark = pytest.mark.postgres_only

PASSWORD = "correct horse battery"
ORIGIN = "https://nova.example.org"


def compose_env(session_redis, tmp_path: Path) -> dict[str, str]:  # noqa: ANN001
    return clean_env(NOVABERG_REDIS_URL=session_redis.url("compose"),
                     NOVABERG_PUBLIC_ORIGIN=ORIGIN, NOVABERG_FILES_DIR=str(tmp_path / "files"))


def serve(data_dir: Path, port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """The compose example's command line."""
    return subprocess.Popen(
        [sys.executable, "-m", "app", "--headless", "--host", "0.0.0.0", "--port", str(port),
         "--data-dir", str(data_dir)], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
        stdout=log.open("wb"), stderr=subprocess.STDOUT)


def healthy(port: int, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"exited with {process.returncode}")
    try:
        return http("GET", f"http://127.0.0.1:{port}/api/health", timeout=1.0)[0] == 200
    except OSError:
        return False


async def test_the_readme_compose_start_wants_a_first_user_then_every_process_serves_it(
        session_redis, tmp_path: Path) -> None:
    env = compose_env(session_redis, tmp_path)
    refused = subprocess.run(
        [sys.executable, "-m", "app", "--headless", "--host", "0.0.0.0", "--port",
         str(free_port()), "--data-dir", str(tmp_path / "nova-1")], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and "with no users" in refused.stderr, refused.stderr
    added = subprocess.run(  # `docker compose run --rm nova-1 novaberg user add anna`
        [sys.executable, "-m", "app", "--data-dir", str(tmp_path / "nova-1"), "user", "add",
         "anna", "--password-stdin"], cwd=ROOT, env=env, input=PASSWORD + "\n",
        capture_output=True, text=True, timeout=60)
    assert (added.returncode, added.stderr) == (0, ""), added.stderr
    ports = [free_port(), free_port()]
    processes = [serve(tmp_path / f"nova-{n + 1}", port, env, tmp_path / f"nova-{n + 1}.log")
                 for n, port in enumerate(ports)]
    try:
        for port, process in zip(ports, processes, strict=True):
            assert wait_for(lambda: healthy(port, process), timeout=60, interval=0.1)
        first, second = (f"http://127.0.0.1:{port}" for port in ports)
        await talk_across(first, second)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)


async def talk_across(first: str, second: str) -> None:
    browser = {"Origin": ORIGIN, "Host": "nova.example.org"}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http_session:
        login = await http_session.post(second + "/api/login",
                                        json={"name": "anna", "password": PASSWORD},
                                        headers=browser)
        assert login.status == 200, await login.text()
        [cookie] = login.cookies.values()
        assert cookie["secure"], "an https public origin gives a Secure session cookie"
        sent = {**browser, "Cookie": f"{cookie.key}={cookie.value}"}
        socket = await http_session.ws_connect(first + "/api/ws", headers=sent)
        posted = await http_session.post(second + "/api/characters/nova/messages",
                                         json={"text": "Hallo Nova, ich bin Anna."},
                                         headers=sent)
        assert posted.status == 202, await posted.text()
        message_id = (await posted.json())["message_id"]
        deadline = time.monotonic() + 60
        while True:
            event = json.loads((await socket.receive(timeout=deadline - time.monotonic())).data)
            if event.get("type") == "character_response" and message_id in event["message_ids"]:
                break
        await socket.close()
        history = await http_session.get(first + "/api/characters/nova/history", headers=sent)
        lines = (await history.json())["messages"]
        assert "Hallo Nova, ich bin Anna." in [line.get("text") for line in lines], lines
        assert len(lines) == 2, lines  # the message and its answer, each once
