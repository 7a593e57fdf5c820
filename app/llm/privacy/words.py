"""Reading the words around a place in a text, for the name finders and the homonym rules:
the word after, the words before, where a word stands on its own, and the English word
list. Everything works on the cached lower case of `scan.py`, position for position.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator

from app.llm.privacy.rules import (
    ADDRESS_NOUNS,
    EN_GROUP_PHRASES,
    EN_GROUPS,
    FAMILIES,
    GROUP_BEFORE,
    GROUP_HEADS,
    GROUP_PREFIXES,
    HONORIFICS,
    PLACE_ARTICLES,
    PLACE_BEFORE_PAIRS,
    PUBLIC_NAMES,
    TITLES,
)
from app.llm.privacy.scan import lowered, present

SPACES = " \t\u00a0"
_REST_OF_WORD = re.compile(r"(?:[^\W\d_]|['’](?=[^\W\d_]))*")
_APOSTROPHES = "'’"
HONORIFIC_WORDS = frozenset(w.rstrip(".") for w in HONORIFICS)
NOT_A_NAME = HONORIFIC_WORDS | TITLES | FAMILIES["weekday"].before | ADDRESS_NOUNS
GENITIVES = ("'s", "’s", "s")


_NEXT_WORD = re.compile(r"(\.)?[ \t\u00a0]+([^\W\d_]+(?:['’][^\W\d_]+)*)")
# The word before a place, in the text read backwards: spaces, a title's dot, the word.
_PREVIOUS_WORD = re.compile(r"[ \t\u00a0]+(\.?)((?:[^\W\d_]|['’](?=[^\W\d_]))+)")


def word_end(text: str, i: int) -> int:
    match = _REST_OF_WORD.match(text, i)
    assert match is not None  # the pattern matches the empty string too
    return match.end()


def word_start(text: str, i: int) -> int:
    while i > 0 and (
        text[i - 1].isalpha() or (text[i - 1] in _APOSTROPHES and i > 1 and text[i - 2].isalpha())
    ):
        i -= 1
    return i


def alone(text: str, start: int, end: int) -> bool:
    """Is `text[start:end]` a whole word (not a piece of a word, an address or a code)?"""
    return (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "@._-'’")) and (
        end == len(text) or not (text[end].isalnum() or text[end] in "@_")
    )


def next_word(text: str, end: int) -> tuple[int, int] | None:
    """The word after the one ending at `end`, when only spaces (or a title's dot) part them."""
    match = _NEXT_WORD.match(text, end)
    if match is None:
        return None
    if match.group(1) and lowered(text)[word_start(text, end) : end] not in TITLES:
        return None
    return match.start(2), match.end(2)


def previous_words(text: str, start: int, count: int = 2) -> list[str]:
    """Up to `count` words before `start` in the same phrase, nearest first, lower case."""
    found: list[str] = []
    backwards = _backwards(text)  # read forwards from `start`, a pattern finds them
    at = len(text) - start
    while len(found) < count:
        match = _PREVIOUS_WORD.match(backwards, at)
        if match is None:
            break
        word = match.group(2)[::-1]
        if match.group(1) and word not in TITLES:  # only a title ends with a dot
            break
        found.append(word)
        at = match.end()
    return found


@functools.lru_cache(maxsize=16)
def _backwards(text: str) -> str:
    return lowered(text)[::-1]


def occurrences(text: str, words: Iterable[str]) -> Iterator[tuple[int, int, str]]:
    """Where each of `words` (lower case) stands as a whole word."""
    low = lowered(text)
    for word in present(text).intersection(words):
        at = low.find(word)
        while at != -1:
            if alone(text, at, at + len(word)):
                yield at, at + len(word), word
            at = low.find(word, at + 1)


def capitalised(text: str, start: int, end: int) -> bool:
    return end - start > 1 and text[start].isupper() and lowered(text)[start:end] not in NOT_A_NAME


@functools.cache
def dictionary() -> frozenset[str]:
    """English words that are ordinary words (lower case in the word list)."""
    from english_words import get_english_words_set

    return frozenset(
        w for w in get_english_words_set(["web2"], lower=False, alpha=True) if w.islower()
    )


def compound_end(text: str, end: int) -> int:
    """The end of a hyphenated word that goes on at `end` ("Anna" of "Anna-Lena")."""
    while end < len(text) - 1 and text[end] == "-" and text[end + 1].isalpha():
        end = word_end(text, end + 1)
    return end


def compound_start(text: str, start: int) -> int:
    """The start of a hyphenated word that `start` continues ("Lena" of "Anna-Lena")."""
    while start > 1 and text[start - 1] == "-" and text[start - 2].isalpha():
        start = word_start(text, start - 1)
    return start


_PUBLIC_WORD = re.compile(r"[^\W\d_]+")


@functools.cache
def _public_index() -> dict[str, tuple[tuple[str, int], ...]]:
    """`rules.PUBLIC_NAMES` by each of their words: (phrase, where the word stands in it)."""
    index: dict[str, list[tuple[str, int]]] = {}
    for phrase in PUBLIC_NAMES:
        for match in _PUBLIC_WORD.finditer(phrase):
            index.setdefault(match.group(), []).append((phrase, match.start()))
    return {word: tuple(entries) for word, entries in index.items()}


def public_name(text: str, start: int) -> tuple[int, int] | None:
    """The public name (`rules.PUBLIC_NAMES`: a brand, a dish, a fictional or public person)
    that the word at `start` stands in, as (start, end); None when it stands in none."""
    low = lowered(text)
    word = _PUBLIC_WORD.match(low, start)
    if word is None:
        return None
    for phrase, offset in _public_index().get(word.group(), ()):
        at = start - offset
        stop = at + len(phrase)
        if (
            at >= 0
            and low.startswith(phrase, at)
            and (at == 0 or not text[at - 1].isalnum())
            and (stop == len(text) or not text[stop].isalpha())
        ):
            return at, stop
    return None


def after_place_words(before: list[str]) -> bool:
    """Do the words before a name say a place follows ("moved to", "fahren nach", "ins")?"""
    return bool(before) and (
        before[0] in PLACE_ARTICLES
        or (len(before) > 1 and (before[1], before[0]) in PLACE_BEFORE_PAIRS)
    )


_GROUP_STARTS = tuple(word + " " for word in (*GROUP_BEFORE, "from"))
_GROUP_DETERMINERS = frozenset(
    {
        "dem",
        "der",
        "den",
        "meinem",
        "meiner",
        "unserem",
        "unserer",
        "seinem",
        "seiner",
        "ihrem",
        "ihrer",
        "deinem",
        "deiner",
        "the",
        "my",
        "our",
        "his",
        "her",
        "their",
        "your",
    }
)


def group_after(text: str, end: int) -> bool:
    """Does a group of people follow the word ending at `end` ("aus dem yogakurs", "vom
    wanderverein", "from accounting", "from my book club", "from next door")?"""
    low = lowered(text)
    if not low[end : end + 6].lstrip(SPACES).startswith(_GROUP_STARTS):
        return False  # most names: no "aus", "vom", "von", "from" after them
    here = next_word(text, end)
    if here is None:
        return False
    first = low[here[0] : here[1]]
    if first in GROUP_BEFORE:
        here = next_word(text, here[1])
        if here is not None and low[here[0] : here[1]] in _GROUP_DETERMINERS:
            here = next_word(text, here[1])
        if here is None:
            return False
        word = low[here[0] : compound_end(text, here[1])]
        return word.endswith(GROUP_HEADS) or word.startswith(GROUP_PREFIXES)
    if first != "from":
        return False
    rest = low[here[1] : here[1] + 24].lstrip(SPACES)
    if rest.startswith(EN_GROUP_PHRASES):
        return True
    for _ in range(3):  # "from HR", "from the choir", "from my climbing group"
        here = next_word(text, here[1])
        if here is None:
            return False
        word = low[here[0] : here[1]]
        if word in EN_GROUPS:
            return True
    return False
