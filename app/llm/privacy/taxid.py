"""The German tax id (Steuer-ID), checksum-valid by `python-stdnum` (`stdnum.de.idnr`),
written as eleven digits or in groups (`12 345 678 901`, `12/345/678/901`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from stdnum.de import idnr

from app.llm.privacy.scan import digit_runs
from app.llm.privacy.spans import Span

_NOT_DIGIT = re.compile(r"\D")
_CANDIDATE = re.compile(r"(?=[1-9])(?<![\w+/.-])[1-9]\d(?:[ \u00a0/.-]?\d{3}){3}(?![\w/-])")


def find(text: str) -> Iterator[Span]:
    # An id starts a digit run: the pattern is only tried there (what `finditer` would
    # find, without scanning every character).
    done = 0
    for start, _ in digit_runs(text):
        if start < done:
            continue
        match = _CANDIDATE.match(text, start)
        if match is None:
            continue
        done = match.end()
        if _valid(_NOT_DIGIT.sub("", match.group(0))):
            yield Span(match.start(), match.end(), "TAXID", match.group(0))


@functools.lru_cache(maxsize=1024)  # the same ids recur in every prompt of a conversation
def _valid(digits: str) -> bool:
    return idnr.is_valid(digits)
