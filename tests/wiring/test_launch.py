"""A second start of the desktop binary while one runs, and a start without a browser — real
subprocesses, a fake browser (the `webbrowser` module runs the command in `BROWSER`: a script
that records the URL it was given, or one that fails)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from app.storage.datadir import (
    INSTANCE_FILE,
    DataDirLock,
    Instance,
    running_instance,
    write_instance,
)
from tests.procs import ROOT, AppProcess, clean_env, free_port, http, wait_for

# Without these, `webbrowser` would also try the machine's own browsers after the fake one.
BROWSER_FINDERS = ("DISPLAY", "WAYLAND_DISPLAY", "TERM")


def browser_env(tmp_path: Path, name: str, *, works: bool = True) -> tuple[dict[str, str], Path]:
    """The environment of a start whose browser is a script; the file it records URLs in."""
    record = tmp_path / f"{name}.opened"
    script = tmp_path / f"{name}.sh"
    script.write_text(f'#!/bin/sh\necho "$1" >> {record}\n' if works else "#!/bin/sh\nexit 1\n")
    script.chmod(0o755)
    env = {k: v for k, v in clean_env(BROWSER=f"{script} %s").items() if k not in BROWSER_FINDERS}
    return env, record


class Desktop:
    """A desktop app (`python -m app` without --headless) as a subprocess, its stderr in a file."""

    def __init__(self, tmp_path: Path, data: Path, env: dict[str, str], *args: str) -> None:
        self.log = tmp_path / f"desktop-{free_port()}.err"
        self.port = free_port()
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "app", "--data-dir", str(data), "--port", str(self.port),
                 *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err,
                stdin=subprocess.DEVNULL)
        self.data = data
        self.base = f"http://127.0.0.1:{self.port}"
        assert wait_for(lambda: "API token for scripts" in self.err(), timeout=30), self.err()

    def err(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def token(self) -> str:
        line = next(line for line in self.err().splitlines() if line.startswith("API token"))
        return line.rsplit(" ", 1)[1]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(15)


@pytest.fixture
def quiet_desktop(tmp_path: Path):
    """A desktop app with --no-browser on `tmp_path / "data"`; it must stop cleanly."""
    env, _ = browser_env(tmp_path, "first")
    app = Desktop(tmp_path, tmp_path / "data", env, "--no-browser")
    yield app
    assert app.stop() == 0


def second_start(data: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", "--data-dir", str(data), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def opened(record: Path) -> list[str]:
    return record.read_text().split() if record.exists() else []


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
        return None


def visit(url: str) -> int:
    """What a browser's first visit of a start link gets: 302 with a session cookie, or the
    error status."""
    try:
        urllib.request.build_opener(NoRedirect).open(url, timeout=5)
    except urllib.error.HTTPError as exc:
        if exc.code == 302:
            assert "novaberg_session=" in exc.headers["Set-Cookie"]
        return exc.code
    raise AssertionError(f"{url} answered without a redirect")


def test_a_second_start_opens_a_tab_on_the_running_app(tmp_path):
    data = tmp_path / "data"
    env, first_browser = browser_env(tmp_path, "first")
    app = Desktop(tmp_path, data, env)
    try:
        assert wait_for(lambda: opened(first_browser), timeout=20)
        env2, second_browser = browser_env(tmp_path, "second")
        result = second_start(data, env2)
        assert result.returncode == 0, result.stderr
        lines = result.stderr.strip().splitlines()
        assert lines == [f"Novaberg is already running at {app.base}: opened a new tab there."]
        [link] = opened(second_browser)
        assert link.startswith(app.base + "/?token=") and link not in opened(first_browser)
        assert visit(link) == 302
        assert visit(link) == 401  # single use, like every start link
        assert app.proc.poll() is None and http("GET", app.base + "/api/health")[0] == 200

        # What the second start read: the owner's alone, and no API token in it.
        instance = data / INSTANCE_FILE
        assert stat.S_IMODE(instance.stat().st_mode) == 0o600
        assert app.token not in instance.read_text()
        assert json.loads(instance.read_text())["url"] == app.base
    finally:
        assert app.stop() == 0
    assert not (data / INSTANCE_FILE).exists()


def test_without_a_browser_the_second_start_prints_the_link_to_open(tmp_path, quiet_desktop):
    app, data = quiet_desktop, quiet_desktop.data
    failing, _ = browser_env(tmp_path, "broken", works=False)
    result = second_start(data, failing)
    assert result.returncode == 0, result.stderr
    [line] = result.stderr.strip().splitlines()
    prefix = f"Novaberg is already running at {app.base}. No browser could be opened: open "
    assert line.startswith(prefix) and line.endswith(" in one.")
    link = line[len(prefix):-len(" in one.")]
    assert link.startswith(app.base + "/?token=") and visit(link) == 302

    # --no-browser: the link, nothing opened.
    quiet, record = browser_env(tmp_path, "unused")
    result = second_start(data, quiet, "--no-browser")
    assert result.returncode == 0, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"Novaberg is already running: {app.base}/?token=")
    assert visit(line.rsplit(" ", 1)[1]) == 302 and opened(record) == []


def test_the_first_start_says_when_no_browser_opens_and_prints_the_url(tmp_path):
    failing, _ = browser_env(tmp_path, "broken", works=False)
    app = Desktop(tmp_path, tmp_path / "data", failing)
    try:
        marker = "No browser could be opened: open "
        assert wait_for(lambda: marker in app.err(), timeout=20), app.err()
        line = next(line for line in app.err().splitlines() if line.startswith(marker))
        link = line[len(marker):-len(" in one.")]
        assert link.startswith(app.base + "/?token=") and visit(link) == 302
    finally:
        assert app.stop() == 0


def test_a_launch_link_takes_the_launch_secret_and_nothing_else(tmp_path, quiet_desktop):
    app, data = quiet_desktop, quiet_desktop.data
    secret = json.loads((data / INSTANCE_FILE).read_text())["launch_secret"]
    url = app.base + "/api/launch-link"
    # Another local user can reach the port, but has neither the file nor the token.
    assert http("POST", url)[0] == 401
    assert http("POST", url, token="guess-" + secret[6:])[0] == 401
    status, body = http("POST", url, token=app.token)  # the API token is not the secret
    assert status == 401 and body["error"]["code"] == "unauthorized"
    status, body = http("POST", url, token=secret)
    assert status == 201 and body["url"].startswith("/?token=")
    assert visit(app.base + body["url"]) == 302
    # The secret opens nothing else of the API.
    assert http("GET", app.base + "/api/me", token=secret)[0] == 401
    assert http("POST", app.base + "/api/start-link", token=secret)[0] == 401


def test_an_explicit_port_or_headless_second_start_still_refuses(tmp_path, quiet_desktop):
    data = quiet_desktop.data
    for args in (["--port", str(free_port())], ["--headless", "--port", str(free_port())]):
        env2, record = browser_env(tmp_path, "second")
        result = second_start(data, env2, *args)
        assert result.returncode == 2 and "is in use by pid" in result.stderr, result.stderr
        assert opened(record) == []


def test_a_desktop_start_beside_a_headless_server_refuses_at_once(tmp_path):
    data = tmp_path / "data"
    server = AppProcess(data).start()
    try:
        env, record = browser_env(tmp_path, "second")
        result = second_start(data, env, "--no-browser")
        assert result.returncode == 2 and "is in use by pid" in result.stderr, result.stderr
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("case", ["other pid", "readable by others", "no lock held"])
def test_an_instance_file_is_believed_only_from_the_lock_holder_and_private(tmp_path, case):
    data = tmp_path / "data"
    lock = DataDirLock(data)
    lock.acquire()  # this process is the holder (flock: another open file conflicts with it)
    try:
        pid = os.getpid() + 1 if case == "other pid" else os.getpid()
        write_instance(data, Instance(pid, "http://127.0.0.1:1", "desktop", "s3cret"))
        assert stat.S_IMODE((data / INSTANCE_FILE).stat().st_mode) == 0o600
        if case == "readable by others":
            (data / INSTANCE_FILE).chmod(0o644)
        if case == "no lock held":
            lock.release()
        assert running_instance(data) is None
    finally:
        lock.release()


def test_the_lock_holders_private_instance_file_is_believed(tmp_path):
    data = tmp_path / "data"
    lock = DataDirLock(data)
    lock.acquire()
    try:
        written = Instance(os.getpid(), "http://127.0.0.1:1", "desktop", "s3cret")
        write_instance(data, written)
        assert running_instance(data) == written
    finally:
        lock.release()
