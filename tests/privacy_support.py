"""A test's own reading of what a request body says, made without the product's normalised
view (`app/llm/privacy/normalise.py`), so that a test of the masking and the egress gate does
not grade them with their own eyes: NFC, then each character as the Unicode data has it —
format characters (soft hyphen, zero-width characters, BOM: category Cf) dropped, a character
that NFKC makes ASCII as that (a mathematical `𝐦` is `m`, not the "rn" the confusables data
gives as its prototype), a letter the confusables data lists as a look-alike of a Latin letter
as that letter, else NFKC — in
lower case, with `i` and `l` one letter (the data makes both the same shape).

    leaked(["Carla Mustermann"], body_text)  ->  the words of the names standing in it
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

from confusable_homoglyphs.confusables import confusables_data

_UMLAUTS = (("ä", ("ae", "a")), ("ö", ("oe", "o")), ("ü", ("ue", "u")), ("ß", ("ss",)))


@functools.cache
def _latin(char: str) -> str | None:
    if char.isascii():
        return None
    for glyph in confusables_data.get(char, ()):
        if glyph["c"].isascii() and glyph["c"].isalpha():
            return glyph["c"]
    return None


def plain(text: str) -> str:
    """The body as a reader sees it, in lower case, `i` and `l` alike."""
    out = []
    for char in unicodedata.normalize("NFC", text):
        if unicodedata.category(char) == "Cf":
            continue
        compatible = unicodedata.normalize("NFKC", char)
        out.append(compatible if compatible.isascii() else _latin(char) or compatible)
    return "".join(out).replace("\u2011", "-").replace("\u2010", "-").lower().replace("l", "i")


def _written(word: str) -> set[str]:
    """The ways a word of a name is written: umlauts as they are, as ae, without dots."""
    forms = {word.lower()}
    for umlaut, others in _UMLAUTS:
        forms |= {f.replace(umlaut, other) for f in forms for other in others}
    for digraph, umlaut in (("ae", "ä"), ("oe", "ö"), ("ue", "ü"), ("ss", "ß")):
        forms |= {f.replace(digraph, umlaut) for f in forms}
    forms |= {"".join(c for c in unicodedata.normalize("NFD", f) if not unicodedata.combining(c))
              for f in forms}
    return {f.replace("l", "i") for f in forms}


def leaked(names: Iterable[str], text: str) -> list[str]:
    """The words of `names` that stand in `text` as words (or before a genitive `s`)."""
    seen = plain(text)
    found = []
    for name in names:
        for word in name.replace("-", " ").split():
            if len(word) < 2 or word.lower() in ("frau", "herr", "dr.", "onkel", "oma"):
                continue
            for form in _written(word):
                if re.search(r"(?<![^\W\d_])" + re.escape(form) + r"s?(?![^\W\d_])", seen):
                    found.append(word)
                    break
    return found
