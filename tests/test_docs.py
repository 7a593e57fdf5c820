"""The front door and its pages: docs/settings.md's table is the one `python -m
app.core.settings --markdown` prints from the settings' declarations, row by row (a stale or
missing row fails with the row to paste); README.md opens with the two commands and quotes the
lines a start prints as the program prints them; docs/api.md's tables name every route the app
serves, and only those; every `design §N` citation in the tree names a section of
docs/design.md, and every relative link in README.md and docs/*.md names a file (and heading)
that exists."""

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
SETTINGS_PAGE = (ROOT / "docs" / "settings.md").read_text()
API_PAGE = (ROOT / "docs" / "api.md").read_text()


def readme_rows() -> dict[str, str]:
    """The rows of docs/settings.md's table, by setting name, in their order."""
    lines = SETTINGS_PAGE.splitlines()
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
        f"docs/settings.md's row for {setting.name} is "
        f"{'missing' if row is None else 'stale'}; paste:\n{expected}")


def test_the_readme_table_has_no_other_rows_and_the_table_order():
    assert list(readme_rows()) == [s.name for s in SETTINGS], (
        "docs/settings.md's table differs from `python -m app.core.settings --markdown`")


def test_the_markdown_command_prints_the_table():
    done = subprocess.run([sys.executable, "-m", "app.core.settings", "--markdown"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == markdown_table()
    assert done.stdout in SETTINGS_PAGE


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
    for line in API_PAGE.splitlines():
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


def test_the_api_page_tables_name_every_route_and_no_other(tmp_path):
    served = app_routes(tmp_path)
    documented = documented_routes(served)
    assert len(served) > 60  # the whole app, not a part of it
    assert not served - documented, f"routes without an api.md row: {sorted(served - documented)}"
    assert not documented - served, f"docs/api.md rows of no route: {sorted(documented - served)}"


# The citations and the links: the code cites the design as `design §N` (docs/design.md, the
# section whose heading begins with `§N`); a page links to another by a relative path, with
# or without `#anchor` (GitHub's anchor of a heading).
# a citation, with any list after it: `design §9, §11 and §3a`
CITATION = re.compile(r"\bdesign §\d+[a-z]?(?:(?:, | and |, and )§\d+[a-z]?)*")
SECTION = re.compile(r"§(\d+[a-z]?)")
OLD_CITATION = re.compile(r"\bSPEC\s§")  # the form before docs/design.md
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CITING = ("app", "statemachine", "tests", "web", "bench")
CITING_SUFFIXES = {".py", ".js", ".mjs", ".css", ".html", ".md", ".toml"}


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(text: str) -> list[str]:
    return [line.lstrip("#").strip() for line in text.splitlines() if re.match(r"#{1,6} ", line)]


def design_sections(design: str) -> set[str]:
    return {h.split()[0][1:] for h in headings(design) if h.startswith("§")}


def broken_citations(text: str, design: str) -> list[str]:
    """The citations in `text` that name no section of the design, and any left in the old
    form (`design §N`, a document the repository does not have)."""
    sections = design_sections(design)
    cited = [n for m in CITATION.finditer(text) for n in SECTION.findall(m[0])]
    broken = [f"design §{n}" for n in cited if n not in sections]
    return broken + [m[0] for m in OLD_CITATION.finditer(text)]


def broken_links(page: Path, text: str) -> list[str]:
    """The relative links of `page` whose file, or whose anchor, does not exist."""
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve()
        if path and not file.exists():
            broken.append(target)
        elif fragment and (not path or file.suffix == ".md"):
            if fragment not in {anchor(h) for h in headings(file.read_text() if path else text)}:
                broken.append(target)
    return broken


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def citing_files() -> list[Path]:
    return [path for folder in CITING for path in sorted((ROOT / folder).rglob("*"))
            if path.suffix in CITING_SUFFIXES and "vendor" not in path.parts
            and "__pycache__" not in path.parts and path.is_file()]


DESIGN = (ROOT / "docs" / "design.md").read_text()


def test_the_design_has_every_section_the_spec_numbers():
    assert {str(n) for n in range(12)} | {"3a", "7a", "8a"} <= design_sections(DESIGN)


def test_every_citation_in_the_tree_names_a_section_of_the_design():
    broken = {str(path.relative_to(ROOT)): found for path in citing_files()
              if (found := broken_citations(path.read_text(errors="replace"), DESIGN))}
    assert not broken, f"citations of no section of docs/design.md: {broken}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_of_a_page_names_a_file_and_heading_that_exist(page):
    assert not broken_links(page, page.read_text())


def test_the_readme_links_every_page_of_docs():
    linked = {target.partition("#")[0] for target in LINK.findall(README)}
    assert {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} <= linked


def test_the_checkers_find_a_planted_break(tmp_path):
    assert broken_citations("see design §5 and design §7a", DESIGN) == []
    planted = "design" + " §12"  # no such section (spelled apart, so the scan of tests/ passes)
    assert broken_citations(f"see {planted}", DESIGN) == [planted]
    assert broken_citations("see design §9, §1" + "3 and §11", DESIGN) == ["design §1" + "3"]
    assert broken_citations("see SPEC" + " §5", DESIGN) == ["SPEC" + " §"]
    (tmp_path / "other.md").write_text("# Other\n\n## The wire contract\n")
    page = tmp_path / "page.md"
    text = ("[a](other.md) [b](other.md#the-wire-contract) [c](https://example.org) "
            "[d](missing.md) [e](other.md#no-such-heading) [f](#here)\n\n## Here\n")
    assert broken_links(page, text) == ["missing.md", "other.md#no-such-heading"]
