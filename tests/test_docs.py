"""README.md's settings table is the one `python -m app.core.settings --markdown` prints from
the settings' declarations, row by row (a stale or missing row fails with the row to paste);
the lines a start prints are quoted as the program prints them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.core.settings import MARKDOWN_HEADER, SETTINGS, markdown_table
from app.wiring.launch import no_browser_line, opened_tab_line, start_lines

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()


def readme_rows() -> dict[str, str]:
    """The rows of README.md's settings table, by setting name, in their order."""
    lines = README.splitlines()
    start = lines.index(MARKDOWN_HEADER[0])
    assert lines[start + 1] == MARKDOWN_HEADER[1]
    rows: dict[str, str] = {}
    for line in lines[start + 2:]:
        if not line.startswith("| `"):
            break
        rows[line.split("`")[1]] = line
    return rows


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_the_readme_row_of_each_setting_is_the_generated_one(setting):
    row = readme_rows().get(setting.name)
    expected = setting.markdown_row()
    assert row == expected, (
        f"README.md's settings row for {setting.name} is "
        f"{'missing' if row is None else 'stale'}; paste:\n{expected}")


def test_the_readme_table_has_no_other_rows_and_the_table_order():
    assert list(readme_rows()) == [s.name for s in SETTINGS], (
        "README.md's settings table differs from `python -m app.core.settings --markdown`")


def test_the_markdown_command_prints_the_table():
    done = subprocess.run([sys.executable, "-m", "app.core.settings", "--markdown"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == markdown_table()
    assert done.stdout in README


def test_readme_opens_with_the_two_commands():
    head = "\n".join(README.splitlines()[:8])
    assert "make run" in head and "make test" in head


def test_readme_quotes_the_lines_a_start_prints_as_printed():
    start_url = "http://127.0.0.1:8765/?token=<start code>"
    assert textwrap.indent(start_lines(start_url, "<token>"), "    ") in README
    assert f"`{no_browser_line(start_url).strip()}`" in README
    assert f"`{opened_tab_line('http://127.0.0.1:P').strip()}`" in README
