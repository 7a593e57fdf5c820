"""README.md's settings table is the one `python -m app.core.settings --markdown` prints from
the settings' declarations, row by row (a stale or missing row fails with the row to paste)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.core.settings import MARKDOWN_HEADER, SETTINGS, markdown_table

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
