"""One real PostgreSQL server per test session, in a temp dir, and a fresh database per test.

The server is Debian's (`initdb`/`pg_ctl` from the `postgresql` package; `make test-postgres`
installs it): its own cluster in a temp dir, listening on a Unix socket there and on no TCP
port, fsync off (nothing of it outlives the session). As root (CI's containers) the cluster
is run as the unprivileged `postgres` user, as PostgreSQL requires. The cluster is removed at
the end of the session whatever happened; a test's database is dropped after the test.

Under `--engine=postgresql` a missing server is a failure, not a skip: the suites that run
there are meant to have run on PostgreSQL.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

ENGINES = ("sqlite", "postgresql")
SEARCH_DIRS = ("/usr/lib/postgresql",)


def server_binary(name: str) -> str:
    """The path of a PostgreSQL server program (`initdb`, `pg_ctl`): on PATH, else in
    Debian's versioned directory (the newest)."""
    found = shutil.which(name)
    if found:
        return found
    for base in SEARCH_DIRS:
        if os.path.isdir(base):
            for version in sorted(os.listdir(base), reverse=True):
                candidate = Path(base, version, "bin", name)
                if candidate.is_file():
                    return str(candidate)
    raise RuntimeError(f"PostgreSQL's {name} is not installed (Debian: apt-get install "
                       "postgresql; `make test-postgres` does it)")


class PostgresServer:
    """A throwaway cluster: `start()`, `new_database()` → URL, `drop()`, `stop()`."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="nb-pg-"))
        self.data = self.directory / "data"
        self._numbers = itertools.count()
        self._user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            self._user = pwd.getpwnam("postgres")
            os.chown(self.directory, self._user.pw_uid, self._user.pw_gid)

    def _run(self, *args: str) -> None:
        command = list(args)
        if self._user is not None:
            command = ["runuser", "-u", self._user.pw_name, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        self._run(server_binary("initdb"), "-D", str(self.data), "-A", "trust", "-U",
                  "postgres", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        options = (f"-k {self.directory} -c listen_addresses='' -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300")
        self._run(server_binary("pg_ctl"), "-D", str(self.data), "-o", options, "-w",
                  "-l", str(self.directory / "server.log"), "start")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.directory}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self) -> str:
        name = f"test_{os.getpid()}_{next(self._numbers)}"
        self._admin(f'CREATE DATABASE "{name}"')
        return name

    def drop(self, name: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(server_binary("pg_ctl"), "-D", str(self.data), "-m", "immediate",
                          "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
