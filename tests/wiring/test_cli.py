"""The real entry point as a subprocess: start, serve, stop; every start-up error path."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from app.storage.database import redact_url
from tests.procs import ROOT, AppProcess, clean_env, free_port, http, redis_pids, wait_for


def run_cli(*args: str, stdin: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=clean_env(),
                          input=stdin, capture_output=True, text=True, timeout=timeout)


def snapshot(path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")} if path.exists() else set()


def test_headless_serves_health_and_authenticated_calls_then_stops_cleanly(tmp_path):
    data = tmp_path / "data"
    app = AppProcess(data).start()
    try:
        status, body = app.get("/api/health")
        assert status == 200 and body["redis"]["embedded"] is True
        assert app.get("/api/me")[1]["user_id"] == "local"
        assert http("GET", app.url + "/api/me")[0] == 401
        assert redis_pids(data / "redis" / "redis.sock")
    finally:
        code = app.stop()
    assert code == 0
    assert redis_pids(data / "redis" / "redis.sock") == []
    # Headless logs go to stdout as JSON lines, and never carry the token.
    output = app.output()
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    listening = [line for line in lines if line["msg"] == "listening"]
    assert listening and listening[0]["headless"] is True and listening[0]["level"] == "info"
    assert any(line["msg"] == "request" and "request_id" in line for line in lines)
    assert app.token not in output


def test_console_script_and_module_both_start(tmp_path):
    assert run_cli("--version").stdout.strip().startswith("novaberg ")
    script = os.path.join(os.path.dirname(sys.executable), "novaberg")
    out = subprocess.run([script, "--version"], capture_output=True, text=True, env=clean_env())
    assert out.returncode == 0 and out.stdout.startswith("novaberg ")


def test_sigint_also_stops_cleanly(tmp_path):
    data = tmp_path / "data"
    app = AppProcess(data).start()
    assert app.stop(signal.SIGINT) == 0
    assert redis_pids(data / "redis" / "redis.sock") == []


def assert_usage_error(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert needle in lines[0], lines[0]


def test_unknown_flag_is_one_line_and_exit_2(tmp_path):
    assert_usage_error(run_cli("--colour"), "unrecognized arguments: --colour")


def test_malformed_config_writes_nothing(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.toml").write_text("session_ttl = = 3\n")
    before = snapshot(data)
    assert_usage_error(run_cli("--headless", "--data-dir", str(data), "--port", str(free_port())),
                       "not valid TOML")
    assert snapshot(data) == before


def test_bad_setting_in_config_names_setting_and_source(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.toml").write_text("graph_slots = 0\n")
    assert_usage_error(run_cli("--headless", "--data-dir", str(data)), "graph_slots")


def test_bad_env_value_names_the_variable(tmp_path):
    env = clean_env(NOVABERG_SESSION_TTL="forever")
    result = subprocess.run([sys.executable, "-m", "app", "--headless", "--data-dir",
                             str(tmp_path / "d")], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=30)
    assert_usage_error(result, "env NOVABERG_SESSION_TTL")
    assert not (tmp_path / "d").exists()


def test_unwritable_data_dir_is_refused(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert_usage_error(run_cli("--headless", "--data-dir", str(blocker / "data")),
                       "is not a directory")


def test_taken_port_in_headless_mode_is_refused_and_writes_nothing(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("--headless", "--data-dir", str(tmp_path / "d"), "--port", str(port))
    assert_usage_error(result, f"cannot bind 127.0.0.1:{port}")
    assert not (tmp_path / "d").exists()


def test_explicit_port_taken_in_desktop_mode_is_refused(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("--no-browser", "--data-dir", str(tmp_path / "d"), "--port", str(port))
    assert_usage_error(result, "cannot bind")


def test_desktop_default_port_taken_falls_back_to_a_free_port(tmp_path):
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # bind despite TIME_WAIT
    try:
        busy.bind(("127.0.0.1", 8765))
        busy.listen()
    except OSError:
        pass  # someone else holds 8765: the fallback is exercised all the same
    proc = subprocess.Popen([sys.executable, "-m", "app", "--no-browser", "--data-dir",
                             str(tmp_path / "d")], cwd=ROOT, env=clean_env(),
                            stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while "Novaberg is running:" not in line:
            line = proc.stderr.readline()
            assert line, "the app ended before printing its URL"
        url = line.split("Novaberg is running:", 1)[1].strip()
        base, _, code = url.partition("/?token=")
        token = proc.stderr.readline().rsplit(" ", 1)[1].strip()  # "API token for scripts …: T"
        assert not base.endswith(":8765") and code and token and code != token
        me = http("GET", base + "/api/me", token=token)
        assert me[0] == 200 and me[1]["user_id"] == "local", me
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        busy.close()


@pytest.mark.parametrize("url, needle", [
    ("ftp://example", "expected redis://"),
    ("redis://127.0.0.1:1/0", "cannot reach Redis"),
])
def test_bad_redis_url_is_refused_and_writes_nothing(tmp_path, url, needle):
    result = run_cli("--headless", "--data-dir", str(tmp_path / "d"), "--redis-url", url)
    assert_usage_error(result, needle)
    assert not (tmp_path / "d").exists()


def test_redis_url_password_is_never_shown():
    assert redact_url("redis://:hunter2@db:6379/0") == "redis://:***@db:6379/0"
    result = run_cli("--headless", "--redis-url", "redis://:hunter2@127.0.0.1:1/0")
    assert result.returncode == 2 and "hunter2" not in result.stderr


def test_headless_refuses_open_bind_without_users(tmp_path):
    result = run_cli("--headless", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "d"))
    assert_usage_error(result, "no users")
    assert not (tmp_path / "d").exists()


def test_user_add_then_token_and_login_work(tmp_path):
    data = tmp_path / "data"
    added = run_cli("--data-dir", str(data), "user", "add", "anna", "--password-stdin",
                    stdin="a long password\n")
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip().rsplit(" ", 1)[-1]
    again = run_cli("--data-dir", str(data), "user", "add", "anna", "--password-stdin",
                    stdin="another password\n")
    assert_usage_error(again, "already exists")
    short = run_cli("--data-dir", str(data), "user", "add", "bob", "--password-stdin",
                    stdin="short\n")
    assert_usage_error(short, "at least 8")
    assert_usage_error(run_cli("--data-dir", str(data), "user", "add", "local",
                               "--password-stdin", stdin="a long password\n"), "reserved")

    app = AppProcess(data, token=None).start()
    try:
        assert http("GET", app.url + "/api/me", token=token)[1]["user_id"] == "anna"
        status, _ = http("POST", app.url + "/api/login",
                         body={"name": "anna", "password": "a long password"})
        assert status == 200
    finally:
        app.stop()


def test_redis_persists_across_a_clean_restart(tmp_path):
    import redis

    data = tmp_path / "data"
    app = AppProcess(data).start()
    sock = data / "redis" / "redis.sock"
    r = redis.Redis(unix_socket_path=str(sock))
    r.set("probe", "kept")
    r.close()
    app.stop()
    app = AppProcess(data).start()
    try:
        r = redis.Redis(unix_socket_path=str(sock))
        assert r.get("probe") == b"kept"
        r.close()
    finally:
        app.stop()


@pytest.mark.parametrize("kill_redis_too", [False, True], ids=["app", "app+redis"])
def test_acknowledged_writes_survive_kill_9(tmp_path, kill_redis_too):
    import redis

    data = tmp_path / "data"
    sock = data / "redis" / "redis.sock"
    app = AppProcess(data).start()
    r = redis.Redis(unix_socket_path=str(sock))
    for i in range(200):
        r.rpush("acked", i)  # each returns only after Redis acknowledged it
    r.close()
    redis_pid = redis_pids(sock)[0]
    if kill_redis_too:
        os.kill(redis_pid, signal.SIGKILL)
    app.kill()
    # With the app gone, its Redis dies too (PR_SET_PDEATHSIG): no orphan to re-attach to.
    assert wait_for(lambda: redis_pids(sock) == [])
    app = AppProcess(data).start()
    try:
        r = redis.Redis(unix_socket_path=str(sock))
        assert [int(x) for x in r.lrange("acked", 0, -1)] == list(range(200))
        r.close()
    finally:
        assert app.stop() == 0
    assert redis_pids(sock) == []


def test_second_app_on_the_same_data_dir_is_refused(tmp_path):
    data = tmp_path / "data"
    app = AppProcess(data).start()
    try:
        result = run_cli("--headless", "--data-dir", str(data), "--port", str(free_port()))
        assert_usage_error(result, "is in use by pid")
        assert app.get("/api/health")[0] == 200
    finally:
        app.stop()


def test_desktop_mode_opens_the_browser_at_the_start_url(tmp_path):
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\necho \"$1\" > {opened}\n")
    browser.chmod(0o755)
    env = clean_env(BROWSER=f"{browser} %s")
    proc = subprocess.Popen([sys.executable, "-m", "app", "--data-dir", str(tmp_path / "d"),
                             "--port", str(free_port())], cwd=ROOT, env=env,
                            stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: opened.exists() and opened.read_text().strip(), timeout=20)
        url = opened.read_text().strip()
        base, _, token = url.partition("/?token=")
        assert base.startswith("http://127.0.0.1:") and token
        # The opened URL is what logs the browser in: it answers with the session cookie.
        import urllib.request

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
                return None

        opener = urllib.request.build_opener(NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as redirect:
            opener.open(url, timeout=5)
        assert redirect.value.code == 302
        assert "novaberg_session=" in redirect.value.headers["Set-Cookie"]
        assert "HttpOnly" in redirect.value.headers["Set-Cookie"]
        # Single use: the same link (e.g. read from `ps` by another local user) opens nothing.
        with pytest.raises(urllib.error.HTTPError) as again:
            opener.open(url, timeout=5)
        assert again.value.code == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
