"""The normalised view every privacy check reads (design §7a): the masking's detectors, the
reply check and the egress gate see the same text, whatever disguise it wears.

The view of a text is, character by character (a character with its combining marks):

- NFKC: fullwidth and mathematical letters, ligatures, a no-break space, a decomposed umlaut
  (`u` + U+0308) become the plain letters and space — first, before the confusables: what
  NFKC makes ASCII is that ("𝐌𝐮𝐬𝐭𝐞𝐫𝐦𝐚𝐧𝐧" is "Mustermann", not the "Musterrnann" of the
  confusables' prototypes);
- default-ignorable code points removed (the Unicode property `Default_Ignorable_Code_Point`,
  read through the `regex` module): soft hyphen, zero-width space, joiner and non-joiner,
  word joiner, byte order mark, variation selectors, bidi controls;
- confusables folded: a letter of another script that the Unicode confusables data
  (`confusable_homoglyphs`, generated from the consortium's `confusables.txt`) lists as
  looking like Latin letters becomes those letters — Cyrillic `а`, Greek `Ο`, the dotless
  `ı`; and a dash or apostrophe that the data lists as looking like `-` or `'` (the
  non-breaking hyphen, the en dash, `’`) becomes that. ASCII is never folded (a `0` stays
  a digit, an `l` a letter), and a capital keeps its case (Cyrillic `І` is `I`, not the
  `l` the data gives as the prototype of both) — but after a small letter, or between a
  capital and a small one, such a capital is the `l` ("MüΙler", "AΙex").

- accents dropped from Latin letters ("José" is "Jose", "Ursu\u0301la" is "Ursula", "ł" is
  "l"): a name is the same name with and without them.

Case, umlauts and `ß` stay as they are: the rules read capitals, and the name index spells
a registered name with umlauts every way itself (`names.spellings`). Each span found in the view is
mapped back (`View.start`/`View.end`) to the characters it came from, so a placeholder
replaces exactly the disguised characters.

Plain ASCII is its own view (no work at all); other texts are read only where they are not
ASCII, and what a run of such characters becomes is cached.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata

import regex

_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")
_MARKS = ("-", "'")  # the punctuation of names (a hyphen, an apostrophe) is folded too
_KEPT = frozenset("äöüÄÖÜß")
_LATIN_WITH = re.compile(r"LATIN (SMALL|CAPITAL) LETTER ([A-Z]) WITH ")


class View:
    """A text's normalised view and the way back to the text's own offsets."""

    __slots__ = ("_ends", "_source_ends", "_source_starts", "_starts", "source", "text")

    def __init__(
        self, source: str, text: str, chunks: tuple[tuple[int, int, int, int], ...] = ()
    ) -> None:
        self.source = source
        self.text = text
        # The changed pieces, in order: (view start, view end, source start, source end).
        self._starts = [c[0] for c in chunks]
        self._ends = [c[1] for c in chunks]
        self._source_starts = [c[2] for c in chunks]
        self._source_ends = [c[3] for c in chunks]

    @property
    def plain(self) -> bool:
        """Is the view the text itself?"""
        return not self._starts

    def start(self, i: int) -> int:
        """Where in the source the view's character `i` comes from."""
        k = bisect.bisect_right(self._starts, i) - 1
        if k < 0:
            return i
        if i < self._ends[k]:
            return self._source_starts[k]
        return self._source_ends[k] + i - self._ends[k]

    def end(self, i: int) -> int:
        """Where in the source a span of the view that ends at `i` ends."""
        if i <= 0:
            return 0
        last = i - 1
        k = bisect.bisect_right(self._starts, last) - 1
        if k < 0:
            return i
        if last < self._ends[k]:
            return self._source_ends[k]
        return self._source_ends[k] + i - self._ends[k]


@functools.lru_cache(maxsize=64)
def view(text: str) -> View:
    """The normalised view of `text` (cached: a call reads the same text many times)."""
    if text.isascii():
        return View(text, text)
    pieces: list[str] = []
    chunks: list[tuple[int, int, int, int]] = []
    last = 0  # source characters taken so far
    length = 0  # view characters written so far
    for match in _NOT_ASCII.finditer(text):
        start, end = match.span()
        if start > last and unicodedata.combining(text[start]):
            start -= 1  # a combining mark belongs to the letter before it ("u" + U+0308)
        changes = _changes(text[start:end])
        if not changes:
            continue
        for offset, size, folded in changes:
            at = start + offset
            if folded == "I" and text[at] in _l_shaped() and _inside_word(text, at, size):
                folded = "l"  # "MüΙler": a Greek capital iota after a small letter is an l
            pieces.append(text[last:at])
            length += at - last
            pieces.append(folded)
            chunks.append((length, length + len(folded), at, at + size))
            length += len(folded)
            last = at + size
    if not chunks:
        return View(text, text)
    pieces.append(text[last:])
    return View(text, "".join(pieces), tuple(chunks))


@functools.lru_cache(maxsize=4096)
def _changes(run: str) -> tuple[tuple[int, int, str], ...]:
    """The units of a run of characters that the view writes otherwise: (offset, length,
    what the view writes). A unit is a character with the combining marks after it."""
    found = []
    i = 0
    while i < len(run):
        j = i + 1
        while j < len(run) and unicodedata.combining(run[j]):
            j += 1
        unit = run[i:j]
        folded = fold(unit)
        if folded != unit:
            found.append((i, j - i, folded))
        i = j
    return tuple(found)


@functools.lru_cache(maxsize=8192)
def fold(unit: str) -> str:
    """One character (with its combining marks) as the view writes it: NFKC first where it
    makes ASCII (a mathematical, fullwidth, circled or superscript letter is the letter it
    stands for: the confusables data gives a mathematical `𝐦` the prototype "rn", a `𝟏` the
    `l`); else a look-alike of a Latin letter as that letter (before NFKC, which makes some
    of them another Greek letter: the lunate sigma `ϲ` would become `ς`); else NFKC, then the
    look-alikes NFKC made."""
    folded = unicodedata.normalize("NFKC", unit)
    if _IGNORABLE.search(folded):
        folded = _IGNORABLE.sub("", folded)
    if folded.isascii():
        return folded
    table = confusable_letters()
    if len(unit) == 1 and unit in table:
        return table[unit]
    return "".join(table.get(c) or _base_letter(_latin_base(c, table)) for c in folded)


def _latin_base(char: str, table: dict[str, str]) -> str:
    """A letter of another script with marks whose base is a look-alike of a Latin letter, as
    that Latin letter with the same marks: the Cyrillic `ё` (`е` + U+0308) as `ë`, `ӧ` as
    `ö`."""
    decomposed = unicodedata.normalize("NFD", char)
    latin = table.get(decomposed[0]) if len(decomposed) > 1 else None
    if latin is None or len(latin) != 1:
        return char
    return unicodedata.normalize("NFC", latin + decomposed[1:])


@functools.lru_cache(maxsize=4096)
def _base_letter(char: str) -> str:
    """A Latin letter without its marks ("é" as "e", "ł" as "l", "ş" as "s"), as Unicode
    decomposes or names it; the German umlauts and "ß" stay (a name index spells them
    every way itself), and so does anything else."""
    if char in _KEPT or char.isascii() or not char.isalpha():
        return char
    decomposed = unicodedata.normalize("NFD", char)
    if len(decomposed) > 1 and decomposed[0].isascii() and decomposed[0].isalpha():
        return decomposed[0]
    match = _LATIN_WITH.match(unicodedata.name(char, ""))
    if match is None:
        return char
    return match.group(2).lower() if match.group(1) == "SMALL" else match.group(2)


def _inside_word(text: str, at: int, size: int) -> bool:
    """Does a letter stand after a small letter ("MüΙler", "PauΙ"), or after a capital and
    before a small one ("AΙex"; not "Ιrene", "KΙ"), invisible characters not counted?"""
    before, after = at - 1, at + size
    while before >= 0 and _IGNORABLE.match(text, before):
        before -= 1
    while after < len(text) and _IGNORABLE.match(text, after):
        after += 1
    if before < 0 or not text[before].isalpha():
        return False
    return text[before].islower() or (after < len(text) and text[after].islower())


@functools.cache
def _l_shaped() -> frozenset[str]:
    """Capitals that the confusables data gives the prototype `l` (as it gives `I`): in a
    word of small letters they are an `l`, elsewhere an `I`."""
    from confusable_homoglyphs.confusables import confusables_data

    return frozenset(
        char
        for char, glyphs in confusables_data.items()
        if len(char) == 1
        and not char.isascii()
        and char.isupper()
        and any(g["c"] == "l" for g in glyphs)
    )


def normalise(text: str) -> str:
    """The view's text alone."""
    return view(text).text


@functools.cache
def confusable_letters() -> dict[str, str]:
    """Non-ASCII characters that the Unicode confusables data lists as looking like ASCII
    letters (or a hyphen, an apostrophe), and those — in the character's own case where the
    data's prototype is of the other: the prototype of `I` and `l` alike is `l`."""
    from confusable_homoglyphs.confusables import confusables_data

    table: dict[str, str] = {}
    for char, glyphs in confusables_data.items():
        if len(char) != 1 or char.isascii() or unicodedata.combining(char):
            continue
        letters = [
            g["c"] for g in glyphs if g["c"].isascii() and (g["c"].isalpha() or g["c"] in _MARKS)
        ]
        if not letters:
            continue
        letter = letters[0]
        if char.isupper() and letter.islower():
            same_shape = [
                g["c"]
                for g in confusables_data.get(letter, ())
                if g["c"].isascii() and g["c"].isalpha() and g["c"].isupper()
            ]
            letter = same_shape[0] if same_shape else letter.upper()
        table[char] = letter
    return table
