"""Issue 38 item 8: secrets on the command line are readable by every local user, so the
token comes from a 0600 file or stdin (`--token-file`), and a secret given as an argument
is warned about in one line."""

from __future__ import annotations

import io
import os

import pytest

from app.core.settings import SettingsError
from app.wiring.secret_args import ARGV_URL_WARNING, ARGV_FLAG_WARNING, read_token_file
from tests.procs import AppProcess, http
from tests.wiring.test_cli import run_cli


def test_token_as_an_argument_warns_in_one_line(tmp_path):
    out = run_cli("--token", "argv-token-123", "token", "list", "--data-dir", str(tmp_path))
    assert out.stderr.splitlines()[0] == ARGV_FLAG_WARNING
    assert "argv-token-123" not in out.stderr


def test_database_url_with_password_warns_and_never_shows_it(tmp_path):
    url = "postgresql://nova:hunter2secret@127.0.0.1:1/nova"
    out = run_cli("--database-url", url, "token", "list", "--data-dir", str(tmp_path))
    assert ARGV_URL_WARNING in out.stderr.splitlines()
    assert "hunter2secret" not in out.stderr
    quiet = run_cli(
        "--database-url",
        "postgresql://nova@127.0.0.1:1/nova",
        "token",
        "list",
        "--data-dir",
        str(tmp_path),
    )
    assert ARGV_URL_WARNING not in quiet.stderr


def test_token_file_readable_by_others_is_refused_in_one_line(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("file-token-123\n")
    os.chmod(secret, 0o644)
    out = run_cli("--headless", "--token-file", str(secret), "--data-dir", str(tmp_path / "d"))
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "chmod 600" in out.stderr
    assert not (tmp_path / "d").exists()


def test_token_from_a_0600_file_and_from_stdin():
    stdin = io.StringIO("stdin-token-123\nrest\n")
    assert read_token_file("-", stdin) == "stdin-token-123"
    with pytest.raises(SettingsError, match="no token"):
        read_token_file("-", io.StringIO("\n"))


def test_server_started_with_token_file_answers_that_token_and_does_not_warn(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("file-token-456\n")
    os.chmod(secret, 0o600)
    app = AppProcess(tmp_path / "data", token=None, extra_args=["--token-file", str(secret)])
    app.start()
    try:
        assert http("GET", app.url + "/api/me", token="file-token-456")[0] == 200
        assert http("GET", app.url + "/api/me", token="other-token-789")[0] == 401
    finally:
        app.stop()
    assert ARGV_FLAG_WARNING not in app.output()
