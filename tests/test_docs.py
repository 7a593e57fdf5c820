"""README.md's settings table is the one `python -m app.core.settings --markdown` prints from
the settings' declarations, row by row (a stale or missing row fails with the row to paste);
the lines a start prints are quoted as the program prints them; the API tables name every
route the app serves, and only those."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.core.settings import MARKDOWN_HEADER, SETTINGS, defaults, markdown_table
from app.wiring.launch import no_browser_line, opened_tab_line, start_lines
from app.wiring.server import create_app

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


# The API tables: a row's first cell names its routes as code, `METHOD[/METHOD] /api/path`,
# then in the same cell `PUT …` (the same path), `POST …/undelete` or `…/reject` (beside or
# below the path before; without a method, the method before), `a\|b` (either last segment).
ROUTE_SPAN = re.compile(r"^((?:GET|POST|PUT|PATCH|DELETE)(?:/(?:GET|POST|PUT|PATCH|DELETE))*)? ?(/api\S*|…\S*)$")


def app_routes(tmp_path: Path) -> set[tuple[str, str]]:
    """Every API route the app serves, as (method, path with its parameters unnamed)."""
    app = create_app(defaults(data_dir=str(tmp_path)))
    routes = set()
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource else {}
        path = info.get("path") or info.get("formatter") or ""
        if route.method != "HEAD" and path.startswith("/api/"):
            routes.add((route.method, unnamed(path)))
    return routes


def unnamed(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def documented_routes(served: set[tuple[str, str]]) -> set[tuple[str, str]]:
    documented = set()
    for line in README.splitlines():
        if not line.startswith("| `"):
            continue
        cell = re.split(r"(?<!\\)\|", line)[1]
        methods: list[str] = []
        path = ""
        for span in re.findall(r"`([^`]+)`", cell):
            match = ROUTE_SPAN.match(span)
            if match is None:
                continue
            methods = match[1].split("/") if match[1] else methods
            first, *others = match[2].split("?")[0].split("\\|")
            if first.startswith("…"):
                first = beside_or_below(path, first[1:], methods, served)
            path = first
            for alternative in [first, *(first.rsplit("/", 1)[0] + "/" + o for o in others)]:
                documented.update((method, unnamed(alternative)) for method in methods)
    return documented


def beside_or_below(before: str, suffix: str, methods: list[str], served: set[tuple[str, str]]) -> str:
    """`…suffix` after `before`: the longest prefix of `before` that makes a served route,
    else `before` + suffix (which then fails as undocumented)."""
    parts = before.split("/")
    for end in range(len(parts), 1, -1):
        candidate = "/".join(parts[:end]) + suffix
        if (methods[0], unnamed(candidate)) in served:
            return candidate
    return before + suffix


def test_the_readme_api_tables_name_every_route_and_no_other(tmp_path):
    served = app_routes(tmp_path)
    documented = documented_routes(served)
    assert len(served) > 60  # the whole app, not a part of it
    assert not served - documented, f"routes without a README row: {sorted(served - documented)}"
    assert not documented - served, f"README rows of no route: {sorted(documented - served)}"
