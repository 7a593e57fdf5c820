"""Is a registered name that is also an ordinary word a person here, or the word?

`is_person` applies one ordered list of rules (its docstring); their words are tables in
`rules.py` (families, determiners, verbs, set phrases). A name is an ordinary word when the
homonym table lists it or the English word list holds it in lower case.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Container
from typing import NamedTuple

from app.llm.privacy.rules import (
    BEI_PERSON_AFTER,
    BEI_REACH,
    BELL_WORDS,
    CLAUSE_JOINERS,
    CLAUSE_VERBS,
    DETERMINERS,
    EN_DETERMINERS,
    EN_PROGRESSIVE,
    EN_WORD_BEFORE,
    FAMILIES,
    HOMONYMS,
    IDIOMS,
    INDEFINITE,
    NOT_VERBS,
    PERSON_AFTER,
    PLACE_ARTICLES,
    PLACE_BEFORE_PAIRS,
    ROLE_WORDS,
    SPEAKING_AFTER,
    SPEAKING_AFTER_PAIRS,
)
from app.llm.privacy.scan import lowered
from app.llm.privacy.words import (
    HONORIFIC_WORDS,
    SPACES,
    after_place_words,
    dictionary,
    group_after,
    next_word,
    previous_words,
    public_name,
)

_PERSON_WORDS = HONORIFIC_WORDS | ROLE_WORDS
# The words of the rules that make a name a thing (`after_place_words`, `_indefinite`): a
# name with none of them in the characters before it needs no further look.
_THING_HINT = re.compile(
    r"\b(?:"
    + "|".join(
        sorted(
            {second for _, second in PLACE_BEFORE_PAIRS} | PLACE_ARTICLES | INDEFINITE,
            key=len,
            reverse=True,
        )
    )
    + r")\b"
)


def is_person(text: str, start: int, end: int, names: Container[str] = frozenset()) -> bool:
    """Is the registered name at `text[start:end]` a person here, or the ordinary word it
    also is? (`names`: the registered names' first words, lower case.)

    Whatever the name, first: a public name it stands in ("Earl Grey", "Dr. Oetker", "Harry
    Potter": `rules.PUBLIC_NAMES`; not when the registered name is that whole phrase) makes it
    the thing; a person word before it ("Frau Rosen", "klingel bei Brenner", "die erzieherin
    Jule"), a group of people after it ("Rosa aus dem yogakurs", "April from accounting")
    or "bei" with a verb of staying ("bei Otto übernachten") makes it a person; a place
    before it ("moved to Austin", "fahren nach Paris") or an indefinite article with an
    adjective between ("einen alten Mercedes"; right before one in lower case: "einen
    stein") makes it the thing.

    Else a name is an ordinary word when `rules.HOMONYMS` lists it or the English word list
    holds it in lower case. The first rule that applies decides; the rules are in this
    order, their words in `rules.py`:

    1. a genitive ("Olive's birthday", "Freitags Tochter"): person;
    2. a set phrase ("frank und frei", "durch Mark und Bein"): word;
    3. its family's word before it ("am Freitag", "pizza Margherita"): word;
    4. an article, possessive or number before it, or two words before with an adjective
       between ("die alte Kiefer", "the dev server"): word, unless a verb of speaking
       follows (for a word of the English list alone: only in lower case, and only after
       an English one: "der kleine ben" is a name);
    5. a verb of speaking after it, or any verb after it at the start of a clause or when
       capitalised ("Heide kommt mit", "Summer is going"): person; its family's word after
       it ("Wiener Würstchen", "Rosen aus dem Garten"): word;
    6. capitalised in mid-sentence, as English writes names ("Miles did ten"): person;
    7. in lower case: the subject of a clause ("bill forgot his wallet", "heide und jassi
       fahren") is a person; else the word (table words; English words after "at", "made" …);
    8. the rest of its family ("Freitags gehe ich", "August 2024"): word.
    """
    public = public_name(text, start)
    if public is not None and public != (start, end):
        return False
    value = text[start:end]
    reading = _reading(value.lower())
    if reading is None:  # only a name: of the rules above, only a place or an article can
        if not _THING_HINT.search(lowered(text), max(0, start - 24), start):
            return True  # make it a thing, and their words are not before it
        before = previous_words(text, start)
        return not (after_place_words(before) or _indefinite(text, start, end, before))
    before = previous_words(text, start)
    previous = before[0] if before else ""
    if previous in _PERSON_WORDS or (
        previous == "bei" and len(before) > 1 and before[1] in BELL_WORDS
    ):
        return True
    if group_after(text, end) or (previous == "bei" and _staying_after(text, end)):
        return True
    if after_place_words(before) or _indefinite(text, start, end, before):
        return False
    families = reading.table
    genitive = text[end : end + 1] in ("s", "S")
    if text[end : end + 2] in ("'s", "’s"):
        return True
    lower = value.islower()
    if reading.lower_only and families:
        if not lower:
            return True  # "Jo kommt": capitalised, the name
        if text[end : end + 1] in (",", "!") and _clause_start(text, start, previous):
            return False  # "jo, mach ich": the interjection before its comma
    if not genitive and previous in reading.before:
        return False  # rule 3, ahead of reading on: rules 1 and 2 could only say "word" too
    if not families and not lower:
        # A capitalised word of the English list alone: a name unless a set phrase says
        # otherwise (of the rules below, only 2 can make it the word).
        return not _idiom_around(text, end, before)
    low = lowered(text)
    following = next_word(text, end + 1 if genitive else end)
    after = low[following[0] : following[1]] if following else ""
    if genitive and after in HONORIFIC_WORDS:
        return True
    if genitive:
        following, after = None, ""
    after2 = ""
    if following is not None and after in _NEEDS_SECOND:
        second = next_word(text, following[1])
        after2 = low[second[0] : second[1]] if second else ""
    if _idiom(before, after, after2) or previous in reading.before:
        return False
    speaking = after in SPEAKING_AFTER or (after, after2) in SPEAKING_AFTER_PAIRS
    # A capitalised word of the English list alone (no table row) after an article is a
    # name ("die Anna kommt auch"): English writes its ordinary words in lower case.
    if (
        (families or lower)
        and _determined(text, start, before, names, DETERMINERS if families else EN_DETERMINERS)
        and not speaking
    ):
        return False
    clause_start = _clause_start(text, start, previous)
    progressive = after in EN_PROGRESSIVE and after2.endswith("ing")  # "Summer is going"
    if speaking or progressive or (after in PERSON_AFTER and (not lower or clause_start)):
        return True
    if after in reading.after:
        return False
    if not lower and not reading.calendar and not clause_start and reading.english:
        return True
    if lower:
        if clause_start and (
            _verb(after) or (after in CLAUSE_JOINERS and (after2 in names or after2 in _SELF))
        ):
            return True
        if families:
            if reading.lower:
                return False
        elif previous in EN_WORD_BEFORE:
            return False
    if reading.adverb_s and genitive:
        return False
    return not (reading.number_after and text[end : end + 2].lstrip()[:1].isdigit())


class _Reading(NamedTuple):
    """What the rules need to know of a name that is also a word (its families merged)."""

    table: bool  # a row of `HOMONYMS` (else: a word of the English list)
    english: bool
    before: frozenset[str]
    after: frozenset[str]
    lower: bool
    adverb_s: bool
    number_after: bool
    calendar: bool  # a weekday or a month: capitalised in English too
    lower_only: bool  # only in lower case the word ("jo passt schon")


@functools.lru_cache(maxsize=4096)
def _reading(word: str) -> _Reading | None:
    """`word`'s ordinary readings (None: it is no ordinary word, only a name)."""
    families = HOMONYMS.get(word)
    english = _english_word(word)
    if not families and not english:
        return None
    rows = [FAMILIES[name] for name in families or ("word",)]
    return _Reading(
        bool(families),
        english,
        frozenset().union(*(f.before for f in rows)),
        frozenset().union(*(f.after for f in rows)),
        any(f.lower for f in rows),
        any(f.adverb_s for f in rows),
        any(f.number_after for f in rows),
        any(f.name in ("weekday", "month") for f in rows),
        all(f.lower_only for f in rows),
    )


_SELF = frozenset({"i", "ich", "me", "mir"})


@functools.lru_cache(maxsize=4096)
def _english_word(word: str) -> bool:
    """An ordinary English word (the word list, lower case; also its plural)."""
    if not word.isascii() or not word.isalpha():
        return False
    vocabulary = dictionary()
    return word in vocabulary or (word.endswith("s") and word[:-1] in vocabulary)


def _idiom_shapes() -> dict[tuple[int, ...], frozenset[tuple[str, ...]]]:
    """`rules.IDIOMS` by the places of their words around the name: one set lookup each."""
    shapes: dict[tuple[int, ...], set[tuple[str, ...]]] = {}
    for idiom in IDIOMS:
        at = idiom.index("*")
        offsets = tuple(i - at for i, part in enumerate(idiom) if part != "*")
        shapes.setdefault(offsets, set()).add(tuple(part for part in idiom if part != "*"))
    return {offsets: frozenset(words) for offsets, words in shapes.items()}


_IDIOMS = _idiom_shapes()
_IDIOM_WORDS = frozenset(part for idiom in IDIOMS for part in idiom if part != "*")
_IDIOM_FIRST_AFTER = tuple(
    sorted({idiom[idiom.index("*") + 1] for idiom in IDIOMS if idiom[-1] != "*"})
)
# Words after a name whose next word a rule reads too.
_NEEDS_SECOND = frozenset(
    {first for first, _ in SPEAKING_AFTER_PAIRS}
    | EN_PROGRESSIVE
    | CLAUSE_JOINERS
    | {words[0] for offsets, group in _IDIOMS.items() for words in group if offsets[0] == 1}
)


def _idiom_around(text: str, end: int, before: list[str]) -> bool:
    low = lowered(text)
    if not (before and before[0] in _IDIOM_WORDS) and not low[end : end + 16].lstrip(
        SPACES
    ).startswith(_IDIOM_FIRST_AFTER):
        return False  # no word of a set phrase next to it: no need to read further
    following = next_word(text, end)
    after, after2 = (low[following[0] : following[1]], "") if following else ("", "")
    if following is not None and after in _NEEDS_SECOND:
        second = next_word(text, following[1])
        after2 = low[second[0] : second[1]] if second else ""
    return _idiom(before, after, after2)


def _idiom(before: list[str], after: str, after2: str) -> bool:
    if not ((before and before[0] in _IDIOM_WORDS) or after in _IDIOM_WORDS):
        return False  # every set phrase has a word right before or right after the name
    around = (
        before[1] if len(before) > 1 else "",
        before[0] if before else "",
        "",
        after,
        after2,
    )  # the words at -2, -1, (the name), 1, 2
    for offsets, words in _IDIOMS.items():
        if tuple([around[i + 2] for i in offsets]) in words:
            return True
    return False


def _determined(
    text: str,
    start: int,
    before: list[str],
    names: Container[str],
    determiners: frozenset[str] = DETERMINERS,
) -> bool:
    """An article, possessive or number right before, or two words before with one word
    between that is no name itself ("die alte Kiefer", "a christmas carol"; not "this summer
    Summer is going")."""
    if (before and before[0] in determiners) or (
        len(before) > 1 and before[1] in determiners and before[0] not in names
    ):
        return True
    i = start
    while i > 0 and text[i - 1] in SPACES:
        i -= 1
    return i < start and i > 0 and text[i - 1].isdigit()  # "300 miles"


def _clause_start(text: str, start: int, previous: str) -> bool:
    """Does a clause start at `start` (text start, punctuation, "und"/"and" before)?"""
    if previous in CLAUSE_JOINERS:
        return True
    i = start
    while i > 0 and text[i - 1] in SPACES:
        i -= 1
    return i == 0 or text[i - 1] in '.,;:!?…–—-(\n"“”„'


def _verb(word: str) -> bool:
    """Does `word`, after a name at a clause start, look like the clause's verb?"""
    if not word or word in NOT_VERBS:
        return False
    if word in CLAUSE_VERBS:
        return True
    if word.isascii() and len(word) > 3 and word.endswith("ed"):
        return True
    if word.endswith("s") and _english_word(word[:-1]) and word[:-1] not in _SELF:
        return True  # "keeps", "disagrees"
    return len(word) > 3 and word.endswith("t") and not _english_word(word)  # "bringt"


def _staying_after(text: str, end: int) -> bool:
    """A verb of staying or ringing within a few words after "bei" + name ("bei Otto
    übernachten", "bei Anna klingeln")."""
    low = lowered(text)
    at = end
    for _ in range(BEI_REACH):
        following = next_word(text, at)
        if following is None:
            return False
        if low[following[0] : following[1]] in BEI_PERSON_AFTER:
            return True
        at = following[1]
    return False


def _indefinite(text: str, start: int, end: int, before: list[str]) -> bool:
    """An indefinite article two words before, with an adjective between ("einen alten
    Mercedes"), or right before the name in lower case ("einen stein"); not when a verb of a
    person follows ("eine alte Anna hat angerufen")."""
    lower = text[start:end].islower()
    if not (
        (lower and before and before[0] in INDEFINITE)
        or (
            len(before) > 1
            and before[1] in INDEFINITE
            and before[0] not in _PERSON_WORDS
            and before[0] not in INDEFINITE
        )
    ):
        return False
    following = next_word(text, end)
    after = lowered(text)[following[0] : following[1]] if following is not None else ""
    return after not in PERSON_AFTER and after not in SPEAKING_AFTER
