"""Person names: the user's registered people, and unregistered names in a person context.

The finders never walk the whole text in Python: they look up their anchor words (the
registered names' first words, honorifics, verbs) with `str.find` on the lower-cased text
and read only the few neighbouring words of each hit, so their cost grows little with the
text and not with the size of the registry.

Registered (`NameIndex`): a name or alias matches in any case at word bounds, also before a
genitive `s` ("Annas"; the `s` stays outside the mask), and every run of parts of a full name
matches on its own ("Özdemir" of "Frau Dr. Özdemir", "Hans Peter" of "Hans Peter Krüger";
never "Frau", "Dr.", "Onkel"). A registered name that is also an ordinary word
(`rules.HOMONYMS`) is decided by its context (`is_person`, rules in `rules.py`): a person word
before it or a verb after it makes it a person; its family's words ("am Freitag", "Rosen
aus dem Garten", "pizza Margherita") make it the ordinary word.

Unregistered: a capitalised name after an honorific or role (`Herr`, `Frau`, `Dr.`, `Mr`,
`Onkel`, `Familie` …) or after "klingel bei" and the like; and English capitalised words in
a person context ("met Priya", "Jonathan said") that are no dictionary word (the
`english-words` list).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Container, Iterable, Iterator, Sequence
from typing import NamedTuple

from app.llm.privacy.rules import (
    BEI_PERSON_AFTER, BEI_REACH, BELL_WORDS, CLAUSE_JOINERS, CLAUSE_VERBS, DETERMINERS,
    EN_NAME_JOINERS, EN_NOT_NAMES, EN_PERSON_AFTER, EN_PERSON_AFTER_PAIRS, EN_PERSON_BEFORE,
    EN_PERSON_BEFORE_PAIRS, EN_PROGRESSIVE, EN_THING_BEFORE_PAIRS, EN_WORD_BEFORE, FAMILIES,
    HOMONYMS, HONORIFICS, IDIOMS, NOT_VERBS, PARTICLES, PERSON_AFTER, SPEAKING_AFTER,
    SPEAKING_AFTER_PAIRS, TITLES,
)
from app.llm.privacy.scan import lowered, present
from app.llm.privacy.spans import Span

_SPACES = " \t\u00a0"
_REST_OF_WORD = re.compile(r"(?:[^\W\d_]|['’](?=[^\W\d_]))*")
_APOSTROPHES = "'’"
_HONORIFIC_WORDS = frozenset(w.rstrip(".") for w in HONORIFICS)
_NOT_A_NAME = _HONORIFIC_WORDS | TITLES | FAMILIES["weekday"].before
_GENITIVES = ("'s", "’s", "s")
_CONTEXT_ANCHORS = _HONORIFIC_WORDS | BELL_WORDS
_PAIR_SECONDS = frozenset(second for _, second in EN_PERSON_BEFORE_PAIRS)


_NEXT_WORD = re.compile(r"(\.)?[ \t\u00a0]+([^\W\d_]+(?:['’][^\W\d_]+)*)")
# The word before a place, in the text read backwards: spaces, a title's dot, the word.
_PREVIOUS_WORD = re.compile(r"[ \t\u00a0]+(\.?)((?:[^\W\d_]|['’](?=[^\W\d_]))+)")


def _word_end(text: str, i: int) -> int:
    return _REST_OF_WORD.match(text, i).end()  # type: ignore[union-attr]


def _word_start(text: str, i: int) -> int:
    while i > 0 and (text[i - 1].isalpha() or (text[i - 1] in _APOSTROPHES and i > 1
                                              and text[i - 2].isalpha())):
        i -= 1
    return i


def _alone(text: str, start: int, end: int) -> bool:
    """Is `text[start:end]` a whole word (not a piece of a word, an address or a code)?"""
    return ((start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "@._-'’"))
            and (end == len(text) or not (text[end].isalnum() or text[end] in "@_")))


def next_word(text: str, end: int) -> tuple[int, int] | None:
    """The word after the one ending at `end`, when only spaces (or a title's dot) part them."""
    match = _NEXT_WORD.match(text, end)
    if match is None:
        return None
    if match.group(1) and lowered(text)[_word_start(text, end):end] not in TITLES:
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


def _occurrences(text: str, words: Iterable[str]) -> Iterator[tuple[int, int, str]]:
    """Where each of `words` (lower case) stands as a whole word."""
    low = lowered(text)
    for word in present(text).intersection(words):
        at = low.find(word)
        while at != -1:
            if _alone(text, at, at + len(word)):
                yield at, at + len(word), word
            at = low.find(word, at + 1)


def _capitalised(text: str, start: int, end: int) -> bool:
    return (end - start > 1 and text[start].isupper()
            and lowered(text)[start:end] not in _NOT_A_NAME)


@functools.cache
def dictionary() -> frozenset[str]:
    """English words that are ordinary words (lower case in the word list)."""
    from english_words import get_english_words_set

    return frozenset(w for w in get_english_words_set(["web2"], lower=False, alpha=True)
                     if w.islower())


def name_terms(names: Iterable[str]) -> tuple[str, ...]:
    """Every term a registry entry matches by: each run of its parts that are names (no
    honorifics, no titles, at least two letters); longest first."""
    terms: set[str] = set()
    for name in names:
        parts = [p for p in name.split() if len(p.strip(".")) >= 2
                 and p.lower().rstrip(".") not in _HONORIFIC_WORDS | TITLES]
        for first in range(len(parts)):
            for last in range(first + 1, len(parts) + 1):
                terms.add(" ".join(parts[first:last]))
    return tuple(sorted(terms, key=lambda t: (-len(t), t.lower())))


class NameIndex:
    """The registered names of one registry, by their first word (built once per change)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.terms = name_terms(names)
        self._by_first: dict[str, list[str]] = {}
        for term in self.terms:  # longest first, so a full name wins over its first part
            first = term.split()[0].lower()
            self._by_first.setdefault(first, []).append(term.lower())
        # A first word as it may stand in a text: as is, or with a genitive ending.
        self._spellings = {first + ending: first for first in self._by_first
                           for ending in ("", *_GENITIVES)}

    @property
    def empty(self) -> bool:
        return not self.terms

    def find(self, text: str) -> Iterator[Span]:
        spellings = present(text).intersection(self._spellings)
        if not spellings:
            return
        low = lowered(text)
        found = []
        for first in {self._spellings[w] for w in spellings}:
            terms = self._by_first[first]
            at = low.find(first)
            while at != -1:
                if at == 0 or not (text[at - 1].isalnum() or text[at - 1] in "@._-'’"):
                    end = _term_end(text, low, at, terms)
                    if end and is_person(text, at, end, self._spellings):
                        found.append(Span(at, end, "PERSON", text[at:end]))
                at = low.find(first, at + 1)
        yield from sorted(found)


def _term_end(text: str, low: str, at: int, terms: list[str]) -> int:
    """Where the longest of `terms` standing as a word at `at` ends (0: none does)."""
    size = len(text)
    for term in terms:
        if not low.startswith(term, at):
            continue
        end = at + len(term)
        if end == size or not (text[end].isalnum() or text[end] in "_@"):
            return end
        # A genitive ending stays outside the mask: "Annas", "Gisela's".
        rest = end + 1 if low[end] == "s" else (
            end + 2 if low[end] in "'’" and low[end + 1:end + 2] == "s" else end)
        if rest > end and (rest == size or not (text[rest].isalnum() or text[rest] in "_@")):
            return end
    return 0


def is_person(text: str, start: int, end: int, names: Container[str] = frozenset()) -> bool:
    """Is the registered name at `text[start:end]` a person here, or the ordinary word it
    also is? (`names`: the registered names' first words, lower case.)

    A name is an ordinary word when `rules.HOMONYMS` lists it or the English word list
    holds it in lower case. The first rule that applies decides; the rules are in this
    order, their words in `rules.py`:

    1. a person word before it ("Frau Rosen", "klingel bei Brenner"): person;
    2. a genitive ("Olive's birthday", "Freitags Tochter"): person;
    3. a set phrase ("frank und frei", "durch Mark und Bein"): word;
    4. its family's word before it ("am Freitag", "pizza Margherita"): word;
    5. an article, possessive or number before it, or two words before with an adjective
       between ("die alte Kiefer", "the dev server"): word, unless a verb of speaking
       follows (for a word of the English list alone: only in lower case);
    6. a verb of speaking after it, or any verb after it at the start of a clause or when
       capitalised ("Heide kommt mit", "Summer is going"): person; its family's word after
       it ("Wiener Würstchen", "Rosen aus dem Garten"): word;
    7. capitalised in mid-sentence, as English writes names ("Miles did ten"): person;
    8. in lower case: the subject of a clause ("bill forgot his wallet", "heide und jassi
       fahren") is a person; else the word (table words; English words after "at", "made" …);
    9. the rest of its family ("Freitags gehe ich", "August 2024"): word.
    """
    value = text[start:end]
    reading = _reading(value.lower())
    if reading is None:
        return True
    families = reading.table
    before = previous_words(text, start)
    previous = before[0] if before else ""
    if previous in _HONORIFIC_WORDS or (previous == "bei" and len(before) > 1
                                        and before[1] in BELL_WORDS):
        return True
    genitive = text[end:end + 1] in ("s", "S")
    if text[end:end + 2] in ("'s", "’s"):
        return True
    lower = value.islower()
    if not genitive and previous in reading.before:
        return False  # rule 4, ahead of reading on: rules 2 and 3 could only say "word" too
    if not families and not lower:
        # A capitalised word of the English list alone: a name unless a set phrase says
        # otherwise (of the rules below, only 3 can make it the word).
        return not _idiom_around(text, end, before)
    low = lowered(text)
    following = next_word(text, end + 1 if genitive else end)
    after = low[following[0]:following[1]] if following else ""
    if genitive and after in _HONORIFIC_WORDS:
        return True
    if genitive:
        following, after = None, ""
    after2 = ""
    if following is not None and after in _NEEDS_SECOND:
        second = next_word(text, following[1])
        after2 = low[second[0]:second[1]] if second else ""
    if _idiom(before, after, after2) or previous in reading.before:
        return False
    speaking = after in SPEAKING_AFTER or (after, after2) in SPEAKING_AFTER_PAIRS
    # A capitalised word of the English list alone (no table row) after an article is a
    # name ("die Anna kommt auch"): English writes its ordinary words in lower case.
    if (families or lower) and _determined(text, start, before) and not speaking:
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
        if clause_start and (_verb(after) or (after in CLAUSE_JOINERS
                                              and (after2 in names or after2 in _SELF))):
            return True
        if families:
            if reading.lower:
                return False
        elif previous in EN_WORD_BEFORE:
            return False
    if reading.adverb_s and genitive:
        return False
    return not (reading.number_after and text[end:end + 2].lstrip()[:1].isdigit())


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


@functools.lru_cache(maxsize=4096)
def _reading(word: str) -> _Reading | None:
    """`word`'s ordinary readings (None: it is no ordinary word, only a name)."""
    families = HOMONYMS.get(word)
    english = _english_word(word)
    if not families and not english:
        return None
    rows = [FAMILIES[name] for name in families or ("word",)]
    return _Reading(bool(families), english, frozenset().union(*(f.before for f in rows)),
                    frozenset().union(*(f.after for f in rows)), any(f.lower for f in rows),
                    any(f.adverb_s for f in rows), any(f.number_after for f in rows),
                    any(f.name in ("weekday", "month") for f in rows))


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
_IDIOM_FIRST_AFTER = tuple(sorted({idiom[idiom.index("*") + 1] for idiom in IDIOMS
                                   if idiom[-1] != "*"}))
# Words after a name whose next word a rule reads too.
_NEEDS_SECOND = frozenset({first for first, _ in SPEAKING_AFTER_PAIRS} | EN_PROGRESSIVE
                          | CLAUSE_JOINERS | {words[0] for offsets, group in _IDIOMS.items()
                                              for words in group if offsets[0] == 1})


def _idiom_around(text: str, end: int, before: list[str]) -> bool:
    low = lowered(text)
    if not (before and before[0] in _IDIOM_WORDS) and not low[end:end + 16].lstrip(
            _SPACES).startswith(_IDIOM_FIRST_AFTER):
        return False  # no word of a set phrase next to it: no need to read further
    following = next_word(text, end)
    after, after2 = (low[following[0]:following[1]], "") if following else ("", "")
    if following is not None and after in _NEEDS_SECOND:
        second = next_word(text, following[1])
        after2 = low[second[0]:second[1]] if second else ""
    return _idiom(before, after, after2)


def _idiom(before: list[str], after: str, after2: str) -> bool:
    if not ((before and before[0] in _IDIOM_WORDS) or after in _IDIOM_WORDS):
        return False  # every set phrase has a word right before or right after the name
    around = (before[1] if len(before) > 1 else "", before[0] if before else "", "", after,
              after2)  # the words at -2, -1, (the name), 1, 2
    for offsets, words in _IDIOMS.items():
        if tuple([around[i + 2] for i in offsets]) in words:
            return True
    return False


def _determined(text: str, start: int, before: list[str]) -> bool:
    """An article, possessive or number right before, or two words before with one word
    between ("die alte Kiefer", "a christmas carol")."""
    if (before and before[0] in DETERMINERS) or (len(before) > 1 and before[1] in DETERMINERS):
        return True
    i = start
    while i > 0 and text[i - 1] in _SPACES:
        i -= 1
    return i < start and i > 0 and text[i - 1].isdigit()  # "300 miles"


def _clause_start(text: str, start: int, previous: str) -> bool:
    """Does a clause start at `start` (text start, punctuation, "und"/"and" before)?"""
    if previous in CLAUSE_JOINERS:
        return True
    i = start
    while i > 0 and text[i - 1] in _SPACES:
        i -= 1
    return i == 0 or text[i - 1] in ".,;:!?…–—-(\n\"“”„"


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


def find_in_context(text: str) -> Iterator[Span]:
    """Unregistered names after an honorific or role ("Herr Kowalski", "Frau Dr. Kühn"),
    after a bell word and "bei" ("klingel bei Brenner"), or between "bei" and such a word
    ("bei Szymanski klingeln")."""
    low = lowered(text)
    starts: dict[int, Span] = {}
    for _, end, word in _occurrences(text, _CONTEXT_ANCHORS):
        here = next_word(text, end)
        if word in BELL_WORDS:
            if here is None or low[here[0]:here[1]] != "bei":
                continue
            here = next_word(text, here[1])
        while here is not None and low[here[0]:here[1]] in TITLES:
            here = next_word(text, here[1])
        particle = here
        while here is not None and text[here[0]].islower() and low[here[0]:here[1]] in PARTICLES:
            here = next_word(text, here[1])  # "Frau von der Leyen": the particles go along
        if here is None or not _capitalised(text, *here) or here[0] in starts:
            continue
        start, stop = (particle[0] if particle is not None else here[0]), here[1]
        if particle is not None and particle[0] in starts:
            continue
        while stop < len(text) - 1 and text[stop] == "-" and text[stop + 1].isupper():
            stop = _word_end(text, stop + 1)  # "Müller-Lüdenscheidt"
        second = next_word(text, stop)
        if (second is not None and _capitalised(text, *second)
                and low[second[0]:second[1]] not in PERSON_AFTER):
            stop = second[1]  # "Herr Jürgen Albers"
        starts[start] = Span(start, stop, "PERSON", text[start:stop])
    for span in _bei_person(text):
        starts.setdefault(span.start, span)
    yield from sorted(starts.values(), key=lambda s: s.start)


def _bei_person(text: str) -> Iterator[Span]:
    """"bei" + a capitalised word + a verb of staying or ringing within a few words ("bei
    Szymanski klingeln", "bei Rautenberg im Erdgeschoss abgeben"); "bei Müller gekauft"
    (the shop) stays."""
    low = lowered(text)
    for _, end, _word in _occurrences(text, ("bei",)):
        here = next_word(text, end)
        if here is None or not _capitalised(text, *here):
            continue
        at = here[1]
        for _ in range(BEI_REACH):
            following = next_word(text, at)
            if following is None:
                break
            if low[following[0]:following[1]] in BEI_PERSON_AFTER:
                yield Span(here[0], here[1], "PERSON", text[here[0]:here[1]])
                break
            at = following[1]


def find_english(text: str) -> Iterator[Span]:
    """English capitalised non-dictionary words in a person context ("met Priya", "Priya
    and I"), and such words joined to a name found so ("Aiyana and Bartholomew")."""
    found = {span.start: span for span in _english_in_context(text)}
    for span in list(found.values()):
        for joined in _joined_names(text, span):
            found.setdefault(joined.start, joined)
    yield from sorted(found.values(), key=lambda s: s.start)


def _joined_names(text: str, span: Span) -> Iterator[Span]:
    low = lowered(text)
    joiner = next_word(text, span.end)
    if joiner is not None and low[joiner[0]:joiner[1]] in EN_NAME_JOINERS:
        other = next_word(text, joiner[1])
        if other is not None and _english_name(text, *other):
            yield Span(other[0], other[1], "PERSON", text[other[0]:other[1]])
    before = previous_words(text, span.start, 2)
    if len(before) == 2 and before[0] in EN_NAME_JOINERS:
        end = span.start
        while end > 0 and not text[end - 1].isalpha():
            end -= 1
        end = _word_start(text, end)  # the joiner
        while end > 0 and text[end - 1] in _SPACES:
            end -= 1
        start = _word_start(text, end)
        if start < end and _english_name(text, start, end):
            yield Span(start, end, "PERSON", text[start:end])


def _english_name(text: str, start: int, end: int) -> bool:
    """A capitalised ASCII word that is no dictionary word, no title, no known public name."""
    token = text[start:end]
    low = token.lower()
    if not (len(token) > 1 and token[0].isupper() and token[1:].islower() and token.isascii()
            and low not in EN_NOT_NAMES and low not in _NOT_A_NAME):
        return False
    vocabulary = dictionary()
    return low not in vocabulary and low.rstrip("s") not in vocabulary


def _english_in_context(text: str) -> Iterator[Span]:
    candidates: set[tuple[int, int]] = set()
    for start, end, word in _occurrences(text, EN_PERSON_BEFORE):
        following = next_word(text, end)
        if following is not None and not any(
                (before, word) in EN_THING_BEFORE_PAIRS
                for before in previous_words(text, start, 1)):  # "paid with Klarna"
            candidates.add(following)
    for start, _, _word in _occurrences(text, EN_PERSON_AFTER):
        i = start
        while i > 0 and text[i - 1] in _SPACES:
            i -= 1
        if i < start and i > 0 and text[i - 1].isalpha():
            candidates.add((_word_start(text, i), i))
    low = lowered(text)
    for start, end, second in _occurrences(text, _PAIR_SECONDS):
        before = previous_words(text, start, 1)
        if before and (before[0], second) in EN_PERSON_BEFORE_PAIRS:
            following = next_word(text, end)
            if following is not None:
                candidates.add(following)
    for first, second in EN_PERSON_AFTER_PAIRS:
        for start, end, _word in _occurrences(text, (first,)):
            following = next_word(text, end)
            if following is None or low[following[0]:following[1]] != second:
                continue
            i = start
            while i > 0 and text[i - 1] in _SPACES:
                i -= 1
            if i < start and i > 0 and text[i - 1].isalpha():
                candidates.add((_word_start(text, i), i))
    for start, end, _word in _occurrences(text, EN_PROGRESSIVE):  # "Kwabena is driving"
        following = next_word(text, end)
        if following is None or not low[following[0]:following[1]].endswith("ing"):
            continue
        i = start
        while i > 0 and text[i - 1] in _SPACES:
            i -= 1
        if i < start and i > 0 and text[i - 1].isalpha():
            candidates.add((_word_start(text, i), i))
    for start, end in sorted(candidates):
        if _english_name(text, start, end):
            yield Span(start, end, "PERSON", text[start:end])
