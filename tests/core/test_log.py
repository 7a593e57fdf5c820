"""Issue 24, item 14: nothing a caller sends can forge a line of the text log (the desktop
terminal). A login name with a newline wrote a second line "Novaberg is running: …?token=…";
an ANSI escape could clear the screen or recolour it. Every value written to the text log is
escaped: control characters (C0, DEL, C1), line and paragraph separators and bidi controls
become visible escapes; a value with a space, `=` or a quote is quoted, so that it cannot
forge a `key=value` either; traceback lines are indented under their record.
"""

from __future__ import annotations

import logging
import re
import sys

from hypothesis import given
from hypothesis import strategies as st

from app.core.log import TextFormatter, fields
from tests.accounts import add_user
from tests.procs import AppProcess, http

FORGED = "anna\nNovaberg is running: http://127.0.0.1:8765/?token=stolen"
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def record(msg: str = "login failed", *args: object, exc_info=None, **values: object):
    made = logging.LogRecord("app.auth", logging.WARNING, __file__, 1, msg, args, exc_info)
    made.__dict__.update(fields(**values))
    return made


def shown(**kw) -> str:
    return TextFormatter().format(record(**kw))


class TestValues:
    def test_a_newline_in_a_value_cannot_start_a_line(self):
        line = shown(name=FORGED, client="192.0.2.1")
        assert "\n" not in line
        assert "\\n" in line and "Novaberg is running" in line  # there, but visibly inside
        assert not any(part.startswith("Novaberg") for part in line.splitlines())

    def test_ansi_escapes_and_other_controls_are_shown_escaped(self):
        line = shown(name="\x1b[2J\x1b[31mred\r\x00\x7f\x9b1m\u2028x\u202egnp.exe\u2066")
        assert not UNSAFE.search(line)
        for escape in ("\\x1b[2J", "\\r", "\\x00", "\\x7f", "\\x9b", "\\u2028", "\\u202e",
                       "\\u2066"):
            assert escape in line, escape

    def test_a_value_cannot_forge_a_field(self):
        line = shown(name="x client=10.0.0.1", client="192.0.2.1")
        assert 'name="x client=10.0.0.1"' in line
        assert line.count("client=") == 2 and "client=192.0.2.1" in line

    def test_quotes_and_backslashes_in_a_quoted_value_are_escaped(self):
        assert 'name="a\\" b=\\\\c"' in shown(name='a" b=\\c')

    def test_plain_values_stay_as_they_are(self):
        assert shown(name="anna", failures=3).endswith("login failed  name=anna failures=3")
        assert "name=Jürgen" in shown(name="Jürgen")

    @given(st.text())
    def test_any_value_stays_on_one_line_without_controls(self, value):
        line = shown(name=value)
        assert not UNSAFE.search(line)


class TestMessagesAndTracebacks:
    def test_message_arguments_are_escaped(self):
        line = TextFormatter().format(record("user %s", FORGED))
        assert "\n" not in line and "\\n" in line

    def test_a_traceback_is_indented_under_its_record_whatever_its_message(self):
        try:
            raise ValueError(FORGED)
        except ValueError:
            text = TextFormatter().format(record("boom", exc_info=sys.exc_info()))
        first, *rest = text.split("\n")
        assert first.endswith("boom")
        assert rest and all(line.startswith("  | ") for line in rest)
        assert not UNSAFE.search("".join(rest))


def test_a_forged_login_name_reaches_the_terminal_escaped(tmp_path):
    """The real entry point with the text log: a login name that carries a start line."""
    data = tmp_path / "data"
    add_user(data)
    app = AppProcess(data, token=None, extra_args=["--log-format", "text"]).start()
    try:
        for name in (FORGED, "\x1b[2J\x1b[1;31mgehackt\x1b[0m"):
            status, _ = http("POST", app.url + "/api/login",
                             body={"name": name, "password": "wrong password"})
            assert status == 401
    finally:
        app.stop()
    output = app.output()
    assert "login failed" in output
    assert not [line for line in output.splitlines() if line.startswith("Novaberg is running")]
    assert "\x1b" not in output
