"""German car plates: district (1–3 letters), letters (1–2), number (1–4, no leading 0),
an optional `E` (electric) or `H` (historic): `B-XY 1234`, `HH-JK 4711E`, `K LM 456`."""

from __future__ import annotations

import re
from collections.abc import Iterator

from app.llm.privacy.rules import NOT_PLATES
from app.llm.privacy.spans import Span

_PLATE = re.compile(r"(?=[A-ZÄÖÜ])(?<![\w-])[A-ZÄÖÜ]{1,3}(?:-[ ]?|[ ])"  # district
                    r"[A-Z]{1,2}[ -]?[1-9]\d{0,3}[EH]?(?![\w-])")  # letters, number, E/H


def find(text: str) -> Iterator[Span]:
    for match in _PLATE.finditer(text):
        if match.group(0).replace("-", " ").startswith(NOT_PLATES):
            continue
        yield Span(match.start(), match.end(), "PLATE", match.group(0))
