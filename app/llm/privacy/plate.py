"""German car plates: district (1–3 letters), letters (1–2), number (1–4, no leading 0),
an optional `E` (electric) or `H` (historic): `B-XY 1234`, `HH-JK 4711E`, `K LM 456`."""

from __future__ import annotations

import re
from collections.abc import Iterator

from app.llm.privacy.rules import NOT_PLATES, PLATE_WORDS, PLATE_WORDS_REACH
from app.llm.privacy.scan import digit_runs, lowered, positions
from app.llm.privacy.spans import Span

_PLATE = re.compile(
    r"(?=[A-ZÄÖÜ])(?<![\w-])[A-ZÄÖÜ]{1,3}(?:-[ ]?|[ ])"  # district
    r"[A-Z]{1,2}[ -]?[1-9]\d{0,3}[EH]?(?![\w-])"
)  # letters, number, E/H


# After a plate word, a plate may be written in lower case ("kennzeichen ist m-ks 482").
_ANY_CASE = re.compile(
    r"(?<![\w-])[a-zäöü]{1,3}(?:-[ ]?|[ ])[a-z]{1,2}[ -]?[1-9]\d{0,3}[eh]?(?![\w-])", re.IGNORECASE
)
# A plate up to its number, ending where the number starts ("HH-JK " of "HH-JK 4711E").
_HEAD = re.compile(r"(?<![\w-])[A-ZÄÖÜ]{1,3}(?:-[ ]?|[ ])[A-Z]{1,2}[ -]?\Z")
_REACH = 8  # the longest head: "HH-" + " " + "JK" + " "


def find(text: str) -> Iterator[Span]:
    # A plate's number is a whole digit run of one to four digits: the pattern is only
    # tried where a plate's head ends right before such a run (what `finditer` would find,
    # without scanning every character).
    done = 0
    for start, end in digit_runs(text):
        if end - start > 4 or text[start] == "0" or start - 2 < done:
            continue
        # The head ends with a capital letter, or one and a space or dash ("K LM 456").
        last = text[start - 1]
        if not ("A" <= last <= "Z" or (last in " -" and "A" <= text[start - 2] <= "Z")):
            continue
        head = _HEAD.search(text, max(done, start - _REACH), start)
        match = head and _PLATE.match(text, head.start())
        if not match:
            continue
        done = match.end()
        if not match.group(0).replace("-", " ").startswith(NOT_PLATES):
            yield Span(match.start(), match.end(), "PLATE", match.group(0))
    yield from _after_plate_words(text)


def _after_plate_words(text: str) -> Iterator[Span]:
    low = lowered(text)
    for word in PLATE_WORDS:
        for at in positions(low, word):
            start = at + len(word)
            match = _ANY_CASE.search(text, start, start + PLATE_WORDS_REACH)
            if (
                match is not None
                and not match.group(0).isupper()  # upper case: found above
                and not (
                    text[match.end() : match.end() + 1].isalnum()
                    or text[match.end() : match.end() + 1] in "_-"
                )
            ):
                yield Span(match.start(), match.end(), "PLATE", match.group(0))
