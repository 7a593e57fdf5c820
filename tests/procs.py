"""Run the real entry point as a subprocess (datasette's `wait_until_responds` idea).

    proc = AppProcess(data_dir, token="t").start()     # python -m app --headless …
    proc.get("/api/health")                             # -> (status, json)
    proc.stop()                                         # SIGTERM, waits, returns the exit code

`command` can be replaced (the binary smoke test passes the built executable).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from app.core.settings import SETTINGS_BY_NAME

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 20.0


_WORKER_PORTS = 2000  # ports per test process, below Linux's ephemeral range (32768–60999)
_next_port = itertools.count()


def free_port() -> int:
    """A port nothing listens on now, for a server a test starts. In a test process of its
    own (pytest-xdist's `gwN`) the port comes from that process's own range, so another
    process's app cannot take it between this probe and the bind."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]
    base = 20000 + int(worker[2:]) * _WORKER_PORTS
    for _ in range(_WORKER_PORTS):
        port = base + next(_next_port) % _WORKER_PORTS
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {base}..{base + _WORKER_PORTS - 1}")


# Set by tests/conftest.py under `--engine=postgresql` (the test's own database): a
# subprocess app or CLI uses the store the test's in-process apps use.
KEPT_ENV = ("NOVABERG_DATABASE_URL",)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without NOVABERG_ settings, but the test's store (`KEPT_ENV`)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NOVABERG_") or k in KEPT_ENV}
    env.update(extra)
    return env


def settings_env(values: Mapping[str, object]) -> dict[str, str]:
    """Settings (by name) as the environment variables that set them."""
    return {SETTINGS_BY_NAME[name].env: _env_text(value) for name, value in values.items()}


def _env_text(value: object) -> str:
    if value is None:
        return ""  # an empty variable unsets a setting that may be unset
    return str(value).lower() if isinstance(value, bool) else str(value)


def http(method: str, url: str, *, token: str | None = None, body: object = None,
         headers: dict[str, str] | None = None, timeout: float = 10.0) -> tuple[int, object]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None


class AppProcess:
    def __init__(self, data_dir: Path, *, token: str | None = "proc-token-123",
                 port: int | None = None, extra_args: list[str] | None = None,
                 command: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.token = token
        self.port = port or free_port()
        self.extra_args = extra_args or []
        self.command = command or [sys.executable, "-m", "app"]
        self.env = env or clean_env()
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"app-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self, wait: bool = True) -> "AppProcess":
        args = [*self.command, "--headless", "--host", "127.0.0.1", "--port", str(self.port),
                "--data-dir", str(self.data_dir), *self.extra_args]
        # The token from the environment, as the README says (`--token` is readable by every
        # local user and warns).
        env = {**self.env, "NOVABERG_TOKEN": self.token} if self.token else self.env
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self._log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if wait:
            self.wait_until_healthy()
        return self

    def wait_until_healthy(self, timeout: float = START_TIMEOUT) -> None:
        def healthy() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"app exited with {self.process.returncode}:\n{self.output()}")
            try:
                return http("GET", self.url + "/api/health", timeout=1.0)[0] == 200
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False

        if not wait_for(healthy, timeout=timeout, interval=0.05):
            raise RuntimeError(f"app not healthy within {timeout} s:\n{self.output()}")

    def get(self, path: str, **kw: object) -> tuple[int, object]:
        return http("GET", self.url + path, token=self.token, **kw)  # type: ignore[arg-type]

    def post(self, path: str, body: object = None, **kw: object) -> tuple[int, object]:
        return http("POST", self.url + path, token=self.token, body=body, **kw)  # type: ignore[arg-type]

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout)
        self._log.close()
        return code

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        self._log.close()


def live_pids(matches: Callable[[Path, bytes], bool]) -> list[int]:
    """Pids of live (non-zombie) processes for which `matches(/proc/PID, cmdline)` holds;
    the cmdline has its NULs replaced by spaces."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
            if state != "Z" and matches(entry, cmdline):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def redis_pids(socket_path: Path) -> list[int]:
    """Live redis-server processes serving `socket_path`."""
    return live_pids(lambda _, cmdline: b"redis-server" in cmdline
                     and str(socket_path).encode() in cmdline)


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02) -> bool:  # noqa: ANN001
    """Whether `predicate()` came true within `timeout` seconds, looked at every `interval`:
    the bounded poll of code that runs outside an event loop (app processes, the browser),
    `tests.waiting.until`'s counterpart."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
