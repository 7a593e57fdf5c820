"""Person names: the user's registered people, and unregistered names in a person context.

The finders never walk the whole text in Python: they look up their anchor words (the
registered names' first words, honorifics, verbs) with `str.find` on the lower-cased text
and read only the few neighbouring words of each hit, so their cost grows little with the
text and not with the size of the registry.

Registered (`NameIndex`): a name or alias matches in any case at word bounds, also before a
genitive `s` ("Annas"; the `s` stays outside the mask), and every run of parts of a full name
matches on its own ("Özdemir" of "Frau Dr. Özdemir", "Hans Peter" of "Hans Peter Krüger";
never "Frau", "Dr.", "Onkel"). A registered name that is also an ordinary word is decided
by its context (`homonyms.is_person`): "am Freitag", "Rosen aus dem Garten", "the dev
server" stay.

Unregistered: a capitalised name after an honorific or role (`Herr`, `Frau`, `Dr.`, `Mr`,
`Onkel`, `Familie` …), after "klingel bei" and the like or between "bei" and "klingeln";
and English capitalised words in a person context ("met Priya", "Jonathan said", "Kwabena
is driving") that are no dictionary word (the `english-words` list).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from app.llm.privacy.homonyms import is_person
from app.llm.privacy.rules import (
    BEI_PERSON_AFTER,
    BEI_REACH,
    BELL_WORDS,
    EN_NAME_JOINERS,
    EN_NOT_NAMES,
    EN_PERSON_AFTER,
    EN_PERSON_AFTER_PAIRS,
    EN_PERSON_BEFORE,
    EN_PERSON_BEFORE_PAIRS,
    EN_PROGRESSIVE,
    EN_THING_BEFORE_PAIRS,
    PARTICLES,
    PERSON_AFTER,
    TITLES,
)
from app.llm.privacy.scan import lowered, present
from app.llm.privacy.spans import Span
from app.llm.privacy.words import (
    GENITIVES,
    HONORIFIC_WORDS,
    NOT_A_NAME,
    SPACES,
    capitalised,
    dictionary,
    next_word,
    occurrences,
    previous_words,
    word_end,
    word_start,
)

_CONTEXT_ANCHORS = HONORIFIC_WORDS | BELL_WORDS
_PAIR_SECONDS = frozenset(second for _, second in EN_PERSON_BEFORE_PAIRS)
# Words after a name that make it a person, alone ("said") or with the word after them
# ("and I", "is driving").
_BEFORE_A_VERB = (EN_PERSON_AFTER | EN_PROGRESSIVE
                  | frozenset(first for first, _ in EN_PERSON_AFTER_PAIRS))


def name_terms(names: Iterable[str]) -> tuple[str, ...]:
    """Every term a registry entry matches by: each run of its parts that are names (no
    honorifics, no titles, at least two letters); longest first."""
    terms: set[str] = set()
    for name in names:
        parts = [p for p in name.split() if len(p.strip(".")) >= 2
                 and p.lower().rstrip(".") not in HONORIFIC_WORDS | TITLES]
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
                           for ending in ("", *GENITIVES)}

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


def find_in_context(text: str) -> Iterator[Span]:
    """Unregistered names after an honorific or role ("Herr Kowalski", "Frau Dr. Kühn"),
    after a bell word and "bei" ("klingel bei Brenner"), or between "bei" and such a word
    ("bei Szymanski klingeln")."""
    low = lowered(text)
    starts: dict[int, Span] = {}
    for _, end, word in occurrences(text, _CONTEXT_ANCHORS):
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
        if here is None or not capitalised(text, *here) or here[0] in starts:
            continue
        start, stop = (particle[0] if particle is not None else here[0]), here[1]
        if particle is not None and particle[0] in starts:
            continue
        while stop < len(text) - 1 and text[stop] == "-" and text[stop + 1].isupper():
            stop = word_end(text, stop + 1)  # "Müller-Lüdenscheidt"
        second = next_word(text, stop)
        if (second is not None and capitalised(text, *second)
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
    for _, end, _word in occurrences(text, ("bei",)):
        here = next_word(text, end)
        if here is None or not capitalised(text, *here):
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
        end = word_start(text, end)  # the joiner
        while end > 0 and text[end - 1] in SPACES:
            end -= 1
        start = word_start(text, end)
        if start < end and _english_name(text, start, end):
            yield Span(start, end, "PERSON", text[start:end])


def _english_name(text: str, start: int, end: int) -> bool:
    """A capitalised ASCII word that is no dictionary word, no title, no known public name."""
    token = text[start:end]
    low = token.lower()
    if not (len(token) > 1 and token[0].isupper() and token[1:].islower() and token.isascii()
            and low not in EN_NOT_NAMES and low not in NOT_A_NAME):
        return False
    vocabulary = dictionary()
    return low not in vocabulary and low.rstrip("s") not in vocabulary


def _english_in_context(text: str) -> Iterator[Span]:
    candidates: set[tuple[int, int]] = set()
    low = lowered(text)
    for start, end, word in occurrences(text, EN_PERSON_BEFORE):  # "met Priya"
        following = next_word(text, end)
        if following is not None and not any(
                (before, word) in EN_THING_BEFORE_PAIRS
                for before in previous_words(text, start, 1)):  # "paid with Klarna"
            candidates.add(following)
    for start, end, second in occurrences(text, _PAIR_SECONDS):  # "married to Declan"
        before = previous_words(text, start, 1)
        if before and (before[0], second) in EN_PERSON_BEFORE_PAIRS:
            following = next_word(text, end)
            if following is not None:
                candidates.add(following)
    for start, end, word in occurrences(text, _BEFORE_A_VERB):
        if word not in EN_PERSON_AFTER:  # "Priya and I", "Kwabena is driving"
            following = next_word(text, end)
            after = low[following[0]:following[1]] if following is not None else ""
            if not ((word, after) in EN_PERSON_AFTER_PAIRS
                    or (word in EN_PROGRESSIVE and after.endswith("ing"))):
                continue
        i = start  # "Jonathan said": the word before
        while i > 0 and text[i - 1] in SPACES:
            i -= 1
        if i < start and i > 0 and text[i - 1].isalpha():
            candidates.add((word_start(text, i), i))
    for start, end in sorted(candidates):
        if _english_name(text, start, end):
            yield Span(start, end, "PERSON", text[start:end])
