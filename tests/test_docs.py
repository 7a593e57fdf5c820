"""README.md documents every setting: name, environment variable and default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.core.settings import SETTINGS

README = (Path(__file__).parent.parent / "README.md").read_text()


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_setting_is_documented_in_readme(setting):
    row = re.search(rf"^\| `{setting.name}` \| `{setting.env}` \|(.*)$", README, re.MULTILINE)
    assert row, f"README.md has no settings row for {setting.name}"
    if setting.default is not None:
        default = str(setting.default).lower() if isinstance(setting.default, bool) else str(setting.default)
        assert f"`{default}`" in row.group(1), f"README shows a stale default for {setting.name}"


def test_readme_opens_with_the_two_commands():
    head = "\n".join(README.splitlines()[:8])
    assert "make run" in head and "make test" in head
