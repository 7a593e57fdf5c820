"""The house's rule for type checking (docs/architecture.md): mypy runs clean over app/ and
statemachine/ (`make lint`), and what it is told to ignore is named and explained — every
`# type: ignore` carries its error code and, on the same line, why. Read from the comments of
the source (a string that spells the words is no ignore), each case proved on small sources.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator

import pytest

from tests.house_support import PACKAGES, ROOT

IGNORE = re.compile(r"#\s*type:\s*ignore\b")
# `# type: ignore[code, …]  # why`: the codes, then a comment of its own with words in it.
EXPLAINED = re.compile(r"#\s*type:\s*ignore\[[a-z0-9_-]+(?:,\s*[a-z0-9_-]+)*\]\s+#\s*\S")


def unexplained_ignores(source: str) -> Iterator[tuple[int, str]]:
    """(line, comment) of each `type: ignore` without its code or without a reason."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT or not IGNORE.search(token.string):
            continue
        if not EXPLAINED.search(token.string):
            yield token.start[0], token.string


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        ("x = f()  # type: ignore\n", True),
        ("x = f()  # type: ignore[arg-type]\n", True),
        ("x = f()  # type: ignore[arg-type]  #\n", True),
        ("x = f()  # type: ignore  # no code\n", True),
        ("x = f()  # type: ignore[arg-type]  # redis-py types it too narrowly\n", False),
        ("x = f()  # type: ignore[valid-type,misc]  # a base chosen at run time\n", False),
        ('x = "# type: ignore"\n', False),
        ("x = f()  # the type: ignored here is a word, not a directive\n", False),
    ],
)
def test_the_rule_catches_an_ignore_without_code_or_reason(line: str, flagged: bool) -> None:
    assert bool(list(unexplained_ignores(line))) is flagged


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {comment}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for number, comment in unexplained_ignores(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "a type: ignore needs [code]  # why:\n" + "\n".join(found)
