"""Person names: the user's registered people, and unregistered names in a person context.

Every finder reads the normalised view of the text (`normalise.py`: no invisible characters,
no fullwidth or look-alike letters); `detectors.detect` maps what they find back to the
text's own characters.

The finders never walk the whole text in Python: they look up their anchor words (the
registered names' first words, honorifics, labels, verbs) with `str.find` on the lower-cased
text and read only the few neighbouring words of each hit, so their cost grows little with
the text and not with the size of the registry.

Registered (`NameIndex`): a name or alias matches in any case and in every spelling
(`spellings`: "Jürgen" as "Juergen" and "Jurgen", "Weiß" as "Weiss", "José" as "Jose"), also
before a genitive ("Annas", "Jonas'", "James's"; the ending stays outside the mask), and
every run of parts of a full name matches on its own ("Özdemir" of "Frau Dr. Özdemir",
"Hans Peter" of "Hans Peter Krüger"), the parts of a hyphenated name too ("Lisa" of
"Lisa-Marie"); never "Frau", "Dr.", "Onkel", "von". A hyphenated compound is one name: a
registered part masks the whole of it ("anna-lena" when "Anna" is registered), unless the
compound names a thing ("Max-Planck-Institut", `rules.THING_HEADS`). Names run together
("CarlaMustermann", "#HappyBirthdayLotte", "leah_kowal") match at the capitals and the
underscores. ASCII look-alikes of a registered name ("CarIa", "Car1a", "J0nas",
"Herrnann") match on the text's `skeleton` — read for the registered names only, in words
that are no ordinary word, so nothing else is touched. A registered name that is also an
ordinary word or stands in a public name is decided by its context (`homonyms.is_person`):
"am Freitag", "Rosen aus dem Garten", "the dev server", "Earl Grey" stay.

Unregistered: a name after an honorific or role (`Herr`, `Frau`, `Dr.`, `Mr`, `Onkel`,
`Familie`, "die erzieherin" …), in lower case too ("frau schulz", "mr hendricks", "tante
gerda hat"); after "klingel bei" and the like or between "bei" and "klingeln"; after an
address or billing label ("Rechnung an:", "z. Hd.", "c/o", "Bill to:"); before a group of
people ("Rosa aus dem yogakurs", "April from accounting"); and English capitalised words in
a person context ("met Priya", "Jonathan said", "Kwabena is driving") that are no
dictionary word (the `english-words` list).

One module: the name finders share the name index, its spellings and the anchor-word lookup.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Container, Iterable, Iterator, Sequence
from typing import NamedTuple

from app.llm.privacy.homonyms import is_person
from app.llm.privacy.normalise import View, view
from app.llm.privacy.rules import (
    BEI_PERSON_AFTER,
    BEI_REACH,
    BELL_WORDS,
    CLAUSE_VERBS,
    DETERMINERS,
    EN_NAME_JOINERS,
    EN_NOT_NAMES,
    EN_PERSON_AFTER,
    EN_PERSON_AFTER_PAIRS,
    EN_PERSON_BEFORE,
    EN_PERSON_BEFORE_PAIRS,
    EN_PROGRESSIVE,
    EN_THING_BEFORE_PAIRS,
    FUNCTION_WORDS,
    GROUP_BEFORE,
    LABEL_NAME_WORDS,
    LABELS,
    PARTICLES,
    PEOPLE_NOUNS,
    PERSON_AFTER,
    PRONOUNS,
    ROLE_WORDS,
    SPEAKING_AFTER,
    THING_HEADS,
    TITLES,
    TRUE_HONORIFICS,
)
from app.llm.privacy.scan import finditer, lowered, present
from app.llm.privacy.spans import Span
from app.llm.privacy.words import (
    GENITIVES,
    HONORIFIC_WORDS,
    NOT_A_NAME,
    SPACES,
    capitalised,
    compound_end,
    compound_start,
    dictionary,
    group_after,
    next_word,
    occurrences,
    previous_words,
    word_end,
    word_start,
)

_PERSON_WORDS = HONORIFIC_WORDS | ROLE_WORDS
_CONTEXT_ANCHORS = _PERSON_WORDS | BELL_WORDS
_PAIR_SECONDS = frozenset(second for _, second in EN_PERSON_BEFORE_PAIRS)
# Words after a name that make it a person, alone ("said") or with the word after them
# ("and I", "is driving").
_BEFORE_A_VERB = (
    EN_PERSON_AFTER | EN_PROGRESSIVE | frozenset(first for first, _ in EN_PERSON_AFTER_PAIRS)
)
_VERBS_AFTER = PERSON_AFTER | CLAUSE_VERBS
_ENGLISH_HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "mx", "sir", "dame"})
# "meine frau", "die frau": the noun (wife, woman), not the honorific.
_NOUN_BEFORE = frozenset(
    {
        "mein",
        "meine",
        "dein",
        "deine",
        "sein",
        "seine",
        "ihr",
        "ihre",
        "unser",
        "unsere",
        "euer",
        "eure",
        "die",
        "der",
        "eine",
        "einer",
        "jede",
        "diese",
        "deren",
        "dessen",
        "seiner",
        "meiner",
        "deiner",
        "ihrer",
        "my",
        "your",
        "his",
        "her",
        "the",
        "a",
        "our",
        "their",
    }
)
_BEI_NOT = DETERMINERS | PRONOUNS | HONORIFIC_WORDS | PARTICLES
# A capital after a small letter: where names run together start ("CarlaMustermann").
_CAMEL = re.compile(r"(?<=[a-zß-öø-ÿ])[A-ZÀ-ÖØ-Þ]")
_UMLAUTS = {"ä": ("ae", "a"), "ö": ("oe", "o"), "ü": ("ue", "u"), "ß": ("ss",)}
_DIGRAPHS = {"ae": "ä", "oe": "ö", "ue": "ü", "ss": "ß"}
_MAX_SPELLINGS = 32


def name_terms(names: Iterable[str]) -> tuple[str, ...]:
    """Every term a registry entry matches by: each run of its parts that are names (not the
    honorifics and titles before the name, no particles alone, at least two letters), and
    each part of a hyphenated part; longest first."""
    return tuple(sorted(_terms(names), key=lambda t: (-len(t), t.lower())))


def _terms(names: Iterable[str]) -> dict[str, bool]:
    """term -> is it a whole entry (True) or a part of one (False)."""
    terms: dict[str, bool] = {}
    for name in names:
        for term, whole in _entry_terms(name):
            terms[term] = terms.get(term, False) or whole
    return terms


@functools.lru_cache(maxsize=4096)  # the reply check builds an index per call from these
def _entry_terms(name: str) -> tuple[tuple[str, bool], ...]:
    """The terms of one registry entry, each with: is it the whole entry?"""
    terms: dict[str, bool] = {}
    words = view(" ".join(name.split())).text.split()
    lead = 0  # the honorifics and titles before the name: "Frau Dr." of "Frau Dr. Özdemir"
    while lead < len(words) and words[lead].lower().rstrip(".") in HONORIFIC_WORDS | TITLES:
        lead += 1
    # After the name an honorific word is a surname ("Thomas Mann", "Anna Freund").
    parts = [p for p in words[lead:] if len(p.strip(".")) >= 2]
    for first in range(len(parts)):
        for last in range(first + 1, len(parts) + 1):
            run = parts[first:last]
            whole = first == 0 and last == len(parts)
            if (
                not whole
                and all(p.lower() in PARTICLES for p in run)
                and not ((first == 0 and run[0][0].isupper()) or last == len(parts))
            ):
                continue  # "von" of "Ursula von der Leyen"; not "Van Morrison", "Aaa Del"
            term = " ".join(run)
            terms[term] = terms.get(term, False) or whole
    for part in parts:
        for piece in part.split("-"):
            if len(piece) >= 2 and piece.lower() not in PARTICLES and piece not in terms:
                terms[piece] = False
    return tuple(terms.items())


@functools.lru_cache(maxsize=4096)
def spellings(term: str) -> frozenset[str]:
    """The lower-case spellings of a registered term: umlauts and `ß` as written, as `ae` /
    `ss` and (when that is no ordinary word) without their dots; `ae` / `ss` as umlaut and
    `ß` (other accents the view drops: "José" is "Jose" on both sides); a first `l` also as
    the `i` that a look-alike capital at a word's start reads as (`normalise.view`)."""
    low = term.lower()
    choices: list[tuple[str, ...]] = []
    stripped: list[str | None] = []  # the choice that drops a letter's marks ("ö" as "o")
    i = 0
    while i < len(low):
        pair = low[i : i + 2]
        char = low[i]
        if pair in _DIGRAPHS:
            choices.append((pair, _DIGRAPHS[pair]))
            stripped.append(None)
            i += 2
            continue
        if char in _UMLAUTS:
            choices.append((char, *_UMLAUTS[char]))
            stripped.append(_UMLAUTS[char][-1] if char != "ß" else None)
        else:
            choices.append((char,))  # other accents: the view drops them on both sides
            stripped.append(None)
        i += 1
    found = {low}
    # Written one way throughout first ("Mueller-Luedenscheidt", "Muller-Ludenscheidt"), then
    # the mixed ways, as many as `_MAX_SPELLINGS` allows.
    uniform = [tuple(c[min(k, len(c) - 1)] for c in choices) for k in (1, 2)]
    for combination in itertools.chain(
        uniform, itertools.islice(itertools.product(*choices), _MAX_SPELLINGS)
    ):
        spelling = "".join(combination)
        if any(
            chosen == drop for chosen, drop in zip(combination, stripped, strict=True)
        ) and _ordinary(spelling):
            continue  # "Schön" is not written "schon"
        found.add(spelling)
    for spelling in list(found):  # noqa: PERF101 (the loop adds to `found`)
        # A capital that looks like both I and l ("Ι", "І") reads as I at a word's start:
        # "Ιena" for "lena"; and an `l` may stand for the capital I ("lIse" for "Ilse").
        if spelling.startswith("l") and not _ordinary("i" + spelling[1:]):
            found.add("i" + spelling[1:])
        elif spelling.startswith("i") and not _ordinary("l" + spelling[1:]):
            found.add("l" + spelling[1:])
        if "rn" in spelling and not _ordinary(skeletal(spelling)):
            found.add(skeletal(spelling))  # an "m" for the "rn" ("Bemd"); the other way: `skeleton`
    return frozenset(found)


# --- the skeleton: ASCII look-alikes, for registered names only ---------------------------

_TOKEN = re.compile(r"[^\W_]+")


def skeletal(spelling: str) -> str:
    """A registered spelling (lower case) as its skeleton: "rn" is "m" ("bernd" is "bemd")."""
    return spelling.replace("rn", "m")


def skeleton(text: str, keep: Container[str] = frozenset()) -> tuple[View, frozenset[str]]:
    """A normalised view with the ASCII look-alikes of letters folded — a capital `I` inside
    a word (after a small letter, or between a capital and a small one: "CarIa", "AIex") and
    a `1` as `l`, a `0` as `o`, "rn" as `m` — in the words that are no ordinary word ("torn",
    "A1", "0815", "Win10" stay) and not in `keep` (the registered spellings: "ernst" with
    Ernst registered is decided as it is written); and those words, folded, in lower case.
    Only the registered names are looked for in it (`NameIndex.find_in_view`, the egress
    gate): the detectors never see it."""
    pieces: list[str] = []
    chunks: list[tuple[int, int, int, int]] = []
    changed: set[str] = set()
    last = length = 0
    for token in _tokens(text):
        word = token.group()
        letters = sum(c.isalpha() for c in word)
        low = word.lower()
        if letters < 2 or 2 * letters <= len(word) or low in keep or _ordinary(low):
            continue
        folded = []
        for i, size, letter in _folds(word, letters < len(word)):
            at = token.start() + i
            pieces.append(text[last:at])
            length += at - last
            pieces.append(letter)
            chunks.append((length, length + len(letter), at, at + size))
            length += len(letter)
            last = at + size
            folded.append((i, size, letter))
        if folded:
            out, j = [], 0
            for i, size, letter in folded:
                out.append(word[j:i] + letter)
                j = i + size
            changed.add(("".join(out) + word[j:]).lower())
    if not chunks:
        return View(text, text), frozenset()
    pieces.append(text[last:])
    return View(text, "".join(pieces), tuple(chunks)), frozenset(changed)


def _tokens(text: str) -> Iterator[re.Match[str]]:
    """The words (runs of letters and digits) that hold a look-alike, each once, in text
    order. Found with `str.find` (a pattern of alternatives scanning every character of a
    200 kB text costs ten times as much), each hit read in its two neighbours."""
    starts = set()
    size = len(text)
    for needle in ("rn", "RN", "I", "0", "1"):
        at = text.find(needle)
        while at != -1:
            before = text[at - 1] if at else ""
            after = text[at + len(needle)] if at + len(needle) < size else ""
            if len(needle) == 2 or (
                (before.isalpha() or after.isalpha())
                if needle != "I"
                else before.islower() or (before.isupper() and after.islower())
            ):
                start = at
                while start > 0 and text[start - 1].isalnum():
                    start -= 1
                starts.add(start)
            at = text.find(needle, at + 1)
    done = 0
    for start in sorted(starts):
        token = _TOKEN.match(text, start)
        if token is not None and start >= done:
            done = token.end()
            yield token


def _folds(word: str, digits: bool) -> Iterator[tuple[int, int, str]]:
    """(offset, size, letter) of each look-alike in a word."""
    i = 0
    while i < len(word):
        char = word[i]
        before = word[i - 1] if i else ""
        after = word[i + 1] if i + 1 < len(word) else ""
        inside = before.islower() or (before.isupper() and after.islower())
        if (char == "I" and inside) or (digits and char == "1"):
            yield i, 1, "l"
        elif digits and char == "0":
            yield i, 1, "O" if not before and after.islower() else "o"
        elif word[i : i + 2] in ("rn", "RN"):
            yield i, 2, "m" if char == "r" else "M"
            i += 1
        i += 1


def _ordinary(spelling: str) -> bool:
    """Is a spelling made by folding letters an ordinary word (a function word, a word of
    the English list)?"""
    return any(word in FUNCTION_WORDS or word in dictionary() for word in spelling.split())


def _first_word(spelling: str) -> str:
    return re.split(r"[ \-]", spelling, maxsplit=1)[0]


class NameIndex:
    """The registered names of one registry, by their first word (built once per change)."""

    def __init__(
        self, names: Sequence[str], aliases: Sequence[str] = (), *, fold: bool = False
    ) -> None:
        self._names, self._aliases = tuple(names), tuple(aliases)
        self._fold = fold  # the index of the skeletons of the spellings (`skeleton`)
        self._skeletal: NameIndex | None = None
        of_names, of_aliases = _terms(names), _terms(aliases)
        whole = dict(of_names)
        for term, is_whole in of_aliases.items():
            whole.setdefault(term, is_whole)
        self.terms = tuple(sorted(whole, key=lambda t: (-len(t), t.lower())))
        # What each term is, for a log line that names a gap without the name.
        self.roles = {
            term: ("part" if not is_whole else "alias" if term not in of_names else "name")
            for term, is_whole in whole.items()
        }
        # first word of a spelling -> [(spelling, term)], longest spelling first
        self._by_first: dict[str, list[tuple[str, str]]] = {}
        for term in self.terms:
            for written in spellings(term):
                spelling = skeletal(written) if fold else written
                if fold and spelling != written and _ordinary(spelling):
                    continue  # "arne" is no "ame" of the word list
                self._by_first.setdefault(_first_word(spelling), []).append((spelling, term))
        for entries in self._by_first.values():
            entries.sort(key=lambda entry: -len(entry[0]))
        # A first word as it may stand in a text: as is, or with a genitive ending.
        self._spellings = {
            first + ending: first for first in self._by_first for ending in ("", *GENITIVES)
        }
        # two letters -> first words: where names run together start ("CarlaMustermann")
        self._by_prefix: dict[str, list[str]] = {}
        for first in self._by_first:
            self._by_prefix.setdefault(first[:2], []).append(first)

    def with_names(self, names: Sequence[str]) -> NameIndex:
        """This index and further names (the detect role's: masked like registered ones)."""
        return NameIndex([*self._names, *names], self._aliases)

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def first_words(self) -> Container[str]:
        """The first words of the registered spellings, also with a genitive ending."""
        return self._spellings

    def spellings_of(self) -> Iterator[tuple[str, str]]:
        """(spelling, term) of every term, longest first: what the egress gate looks for."""
        for entries in self._by_first.values():
            yield from entries

    @property
    def skeletal(self) -> NameIndex:
        """The same names, their spellings as skeletons: what is looked for in a text's
        `skeleton` (built on first use)."""
        if self._fold:
            return self
        if self._skeletal is None:
            self._skeletal = NameIndex(self._names, self._aliases, fold=True)
        return self._skeletal

    def in_skeleton(self, text: str) -> View | None:
        """The `skeleton` of a normalised view when one of its folded words may start a
        registered name ("CarIa", "J0nas", "Herrnann"); else None."""
        shown, changed = skeleton(text, self.first_words)
        firsts = self.skeletal.first_words
        return shown if any(word in firsts for word in changed) else None

    def find(self, text: str) -> Iterator[Span]:
        """The registered names in `text` (any text: it is read in its normalised view)."""
        shown = view(text)
        for span in self.find_in_view(shown.text):
            start, end = shown.start(span.start), shown.end(span.end)
            yield Span(start, end, "PERSON", text[start:end])

    def find_in_view(self, text: str) -> Iterator[Span]:
        """The registered names in a text that is its own normalised view."""
        if not self.terms:
            return
        low = lowered(text)
        candidates: set[tuple[int, str]] = set()
        for first in {self._spellings[w] for w in present(text).intersection(self._spellings)}:
            at = low.find(first)
            while at != -1:
                candidates.add((at, first))
                at = low.find(first, at + 1)
        for match in finditer(_CAMEL, text):  # names run together: at each inner capital
            for at in (match.start(), word_start(text, match.start())):
                for first in self._by_prefix.get(low[at : at + 2], ()):
                    if low.startswith(first, at):
                        candidates.add((at, first))
        found: list[Span] = []
        for at, first in sorted(candidates):
            span = self._match(text, low, at, first)
            if span is not None:
                found.append(span)
        if not self._fold and (folded := self.in_skeleton(text)) is not None:
            for span in self.skeletal.find_in_view(folded.text):  # "CarIa", "Herrnann"
                start, end = folded.start(span.start), folded.end(span.end)
                found.append(Span(start, end, "PERSON", text[start:end]))
        yield from _joined(found, text)

    def _match(self, text: str, low: str, at: int, first: str) -> Span | None:
        for spelling, _term in self._by_first[first]:
            if not low.startswith(spelling, at):
                continue
            found = occurrence(text, low, at, at + len(spelling), self._spellings)
            if found is None:
                continue  # inside a word: a shorter spelling may end at a word's end
            if found.span is None:
                return None
            start, end = found.span
            return Span(start, end, "PERSON", text[start:end])
        return None


class Occurrence(NamedTuple):
    """What a registered name standing somewhere is (`occurrence`)."""

    span: tuple[int, int] | None  # the person's span; None: the ordinary word, or a thing
    joined: bool  # run together with another word ("CarlaMustermann")
    compound: bool  # in a hyphenated compound ("Anna-Lena")


def occurrence(
    text: str, low: str, start: int, end: int, names: Container[str] = frozenset()
) -> Occurrence | None:
    """A registered spelling at `text[start:end]` (a normalised view, `low` its lower case):
    None when it stands inside a word ("Johanna" is no "anna"); else the person's span —
    itself, or the hyphenated compound around it — or no span when it is the ordinary word
    or names a thing (`homonyms.is_person`, `rules.THING_HEADS`). The masking and the egress
    gate decide alike by this."""
    camel = start > 0 and text[start - 1].islower() and text[start].isupper()
    if start > 0 and text[start - 1].isalpha() and not camel:
        return None
    joined = _bound(text, low, end)
    if joined is None:
        return None
    if camel or joined:
        return Occurrence((start, end), True, False)
    word_stop = end if text[end : end + 1] != "s" else word_end(text, end)  # "Sankt-Martins-Umzug"
    if text[word_stop : word_stop + 1] != "-" and (start < 2 or text[start - 1] != "-"):
        return Occurrence(
            (start, end) if is_person(text, start, end, names) else None, False, False
        )
    first, stop = compound_start(text, start), compound_end(text, word_stop)
    if stop == word_stop:
        stop = end  # nothing joined after it: the ending stays outside ("Anna-Lenas")
    if (first, stop) != (start, end):  # a hyphenated compound is one name
        if not _names_a_thing(low, first, stop):
            return Occurrence((first, stop), False, True)
        # A thing named after a registered person ("Carla-Mustermann-Stiftung"): the name
        # before the head is masked when each of its parts is registered (not "Max-Planck-").
        head = low.rindex("-", first, stop)
        named = all(part in names for part in low[first:head].split("-"))
        return Occurrence((first, head) if named else None, False, True)
    return Occurrence((start, end) if is_person(text, start, end, names) else None, False, False)


def _bound(text: str, low: str, end: int) -> bool | None:
    """Does a name end at `end`? False: at a word's end (or before a genitive); True: before a
    capital, as names run together do; None: inside a word."""
    size = len(text)
    if end == size or not text[end].isalpha():
        return False
    if text[end].isupper() and text[end - 1].islower():
        return True
    # A genitive ending stays outside the mask: "Annas", "Gisela's", the plural "die Demirs".
    if low[end] == "s" and (end + 1 == size or not text[end + 1].isalpha()):
        return False
    return None


def _names_a_thing(low: str, start: int, end: int) -> bool:
    """Is the hyphenated compound `low[start:end]` the name of a thing ("Karl-Marx-Straße",
    "Goethe-Institut")? Its last part is a head of `rules.THING_HEADS` — ends with one when
    the compound has three parts or more, is one when it has two ("Müller-Neuhaus" is a
    person)."""
    parts = low[start:end].split("-")
    last = parts[-1]
    return last in THING_HEADS or (len(parts) > 2 and last.endswith(THING_HEADS))


def _joined(spans: list[Span], text: str) -> Iterator[Span]:
    """Names that touch ("Carla" and "Mustermann" of "CarlaMustermann") as one span."""
    merged: list[Span] = []
    for span in sorted(spans):
        if merged and merged[-1].end >= span.start:
            last = merged[-1]
            end = max(last.end, span.end)
            merged[-1] = Span(last.start, end, "PERSON", text[last.start : end])
        else:
            merged.append(span)
    yield from merged


def find_in_context(text: str) -> Iterator[Span]:
    """Unregistered names after an honorific or role ("Herr Kowalski", "Frau Dr. Kühn",
    "frau schulz", "tante gerda hat"), after a bell word and "bei" ("klingel bei Brenner"),
    or between "bei" and such a word ("bei Szymanski klingeln")."""
    low = lowered(text)
    starts: dict[int, Span] = {}
    for anchor, end, word in occurrences(text, _CONTEXT_ANCHORS):
        here = next_word(text, end)
        if word in BELL_WORDS:
            if here is None or low[here[0] : here[1]] != "bei":
                continue
            here = next_word(text, here[1])
        while here is not None and low[here[0] : here[1]] in TITLES:
            here = next_word(text, here[1])
        particle = here
        while here is not None and text[here[0]].islower() and low[here[0] : here[1]] in PARTICLES:
            here = next_word(text, here[1])  # "Frau von der Leyen": the particles go along
        if here is None or here[0] in starts:
            continue
        lower = not capitalised(text, *here)
        if lower and not _lower_name(text, anchor, word, here):
            continue
        start, stop = (particle[0] if particle is not None else here[0]), here[1]
        if particle is not None and particle[0] in starts:
            continue
        while (
            stop < len(text) - 1
            and text[stop] == "-"
            and (text[stop + 1].isupper() or (lower and text[stop + 1].isalpha()))
        ):
            stop = word_end(text, stop + 1)  # "Müller-Lüdenscheidt", "schmidt-reuter"
        second = next_word(text, stop)
        if (
            not lower
            and second is not None
            and capitalised(text, *second)
            and low[second[0] : second[1]] not in PERSON_AFTER
        ):
            stop = compound_end(text, second[1])  # "Herr Jürgen Albers"
        starts[start] = Span(start, stop, "PERSON", text[start:stop])
    for span in _bei_person(text):
        starts.setdefault(span.start, span)
    yield from sorted(starts.values(), key=lambda s: s.start)


def find_again(text: str, people: Iterable[Span]) -> Iterator[Span]:
    """The unregistered names found in context (`people`: "Frau Rosen", "Mr Baker") where
    they stand again as the person: each word of such a name, as it was written, right
    before a verb of a person ("Rosen hat mir Kuchen gebracht", "Baker said") and after no
    article ("ein Specht hämmert"); the word elsewhere stays ("hat mir Rosen geschenkt")."""
    low = lowered(text)
    taken = [(s.start, s.end) for s in people]
    words = {
        part
        for span in people
        for part in span.value.replace("-", " ").split()
        if len(part) >= 3 and part.lower() not in _PERSON_WORDS and part.lower() not in TITLES
    }
    for word in words:
        at = text.find(word)
        while at != -1:
            end = at + len(word)
            if (
                not (at and text[at - 1].isalpha())
                and not (end < len(text) and text[end].isalpha())
                and not any(start <= at < stop for start, stop in taken)
            ):
                following = next_word(text, end)
                after = low[following[0] : following[1]] if following is not None else ""
                if after in PERSON_AFTER or after in SPEAKING_AFTER:
                    before = previous_words(text, at, 1)
                    if not (before and before[0] in DETERMINERS):
                        yield Span(at, end, "PERSON", word)
            at = text.find(word, end)


def _lower_name(text: str, anchor: int, word: str, here: tuple[int, int]) -> bool:
    """Is the lower-case word at `here`, after the person word `word` at `anchor`, a name?

    After an honorific ("frau schulz", "mr hendricks") it is, unless it is a function word
    or an address noun ("frau doktor"), or, after an English one, a dictionary word without
    a verb after it. After a role ("tante gerda hat", "my sister rachel is") or the noun
    "frau" ("meine frau kocht") a verb must follow it, unless, after an English role, it is no
    English word ("my manager deirdre finally …")."""
    low = lowered(text)
    candidate = low[here[0] : here[1]]
    if word in BELL_WORDS:  # "klingel bei weiß": nobody rings at a word; not "bei uns"
        return word.startswith("kling") and _addressed(candidate)
    if (
        len(candidate) < 2
        or candidate in FUNCTION_WORDS
        or candidate in NOT_A_NAME
        or candidate in _VERBS_AFTER
    ):
        return False
    before = previous_words(text, anchor, 1)
    honorific = word in TRUE_HONORIFICS and not (before and before[0] in _NOUN_BEFORE)
    following = next_word(text, compound_end(text, here[1]))
    verb_after = following is not None and (
        low[following[0] : following[1]] in _VERBS_AFTER
        or (low[following[0] : following[1]].endswith("ed") and text[here[0]].isascii())
    )
    english_word = candidate in dictionary() or candidate.rstrip("s") in dictionary()
    if honorific:
        return not (word in _ENGLISH_HONORIFICS and english_word and not verb_after)
    if verb_after:
        return True
    return candidate.isascii() and not english_word and _english_role(word)


def _addressed(candidate: str) -> bool:
    """Is a lower-case word after a doorbell ("klingel bei …") or an addressing label
    ("z. hd. …", "c/o …") a name? Any word but a pronoun, an article, a word for people or a
    role: a surname that is also a word ("weiß", "schwarz") too."""
    return len(candidate) >= 2 and not (
        candidate in _BEI_NOT or candidate in PEOPLE_NOUNS or candidate in _PERSON_WORDS
    )


# Labels after which only a person follows: a word there is a name ("z. hd. weiß").
_ADDRESSING = frozenset({"z. hd.", "z.hd.", "zu händen", "zu händen von", "c/o", "care of"})


def _english_role(word: str) -> bool:
    return word.isascii() and (word in dictionary() or word in EN_PERSON_BEFORE)


def _bei_person(text: str) -> Iterator[Span]:
    """ "bei" + a name + a verb of staying or ringing within a few words ("bei Szymanski
    klingeln", "bei rautenberg im erdgeschoss abgeben", "bei weiß klingeln"); "bei Müller
    gekauft" (the shop) and "bei uns klingeln" stay."""
    low = lowered(text)
    for _, end, _word in occurrences(text, ("bei",)):
        here = next_word(text, end)
        if here is None or (
            not capitalised(text, *here)
            and (low[here[0] : here[1]] in _BEI_NOT or here[1] - here[0] < 2)
        ):
            continue
        at = here[1]
        for _ in range(BEI_REACH):
            following = next_word(text, at)
            if following is None:
                break
            if low[following[0] : following[1]] in BEI_PERSON_AFTER:
                yield Span(here[0], here[1], "PERSON", text[here[0] : here[1]])
                break
            at = following[1]


def find_labelled(text: str) -> Iterator[Span]:
    """A name after an address or billing label (`rules.LABELS`): "Rechnung an: Jonas
    Wegener, Bahnhofstraße 12", "z. Hd. Frau Dr. Elisabeth Rohwedder", "c/o Hauke Petersen",
    "Bill to: Marcus Delaney", "lieferung an: mara steinbach, bitte …"."""
    low = lowered(text)
    words = present(text)
    for label, needs_colon in LABELS.items():
        if _LABEL_FIRST[label] not in words:
            continue
        at = low.find(label)
        while at != -1:
            span = _labelled(text, low, at, label, needs_colon)
            if span is not None:
                yield span
            at = low.find(label, at + 1)


_LABEL_FIRST = {label: re.findall(r"[^\W\d_]+", label)[0] for label in LABELS}


def _labelled(text: str, low: str, at: int, label: str, needs_colon: bool) -> Span | None:
    end = at + len(label)
    if (at > 0 and text[at - 1].isalnum()) or (
        end < len(text) and text[end].isalpha() and label[-1].isalpha()
    ):
        return None
    i = end
    while i < len(text) and text[i] in SPACES:
        i += 1
    if i < len(text) and text[i] == ":":
        i += 1
    elif needs_colon:
        return None
    while i < len(text) and text[i].isspace():
        i += 1
    start = stop = -1
    taken = 0
    here = _word_at(text, i)
    while here is not None and taken < LABEL_NAME_WORDS:
        word = low[here[0] : here[1]]
        if word.rstrip(".") in HONORIFIC_WORDS | TITLES and start == -1:
            here = _word_at(text, _skip_dot(text, here[1]))
            continue
        if word in PARTICLES and start != -1:
            pass  # "Ms de la Fuente": the particles go along
        elif (
            (
                word in FUNCTION_WORDS
                and not (start == -1 and label in _ADDRESSING and _addressed(word))
            )
            or here[1] - here[0] < 2
            or _digit_after(text, here[1])
            or (start != -1 and word in BEI_PERSON_AFTER)  # "z. hd. weiß abgeben"
        ):  # "Bahnhofstraße 12": the street
            break
        else:
            if start == -1:
                start = here[0]
            stop = here[1]
            taken += 1
        here = _word_at(text, _skip_spaces(text, here[1]))
    if start == -1:
        return None
    return Span(start, stop, "PERSON", text[start:stop])


def _word_at(text: str, i: int) -> tuple[int, int] | None:
    if i >= len(text) or not text[i].isalpha():
        return None
    return i, compound_end(text, word_end(text, i))


def _skip_spaces(text: str, i: int) -> int:
    j = i
    while j < len(text) and text[j] in SPACES:
        j += 1
    return j if j > i else len(text) + 1  # words must be parted by spaces


def _skip_dot(text: str, i: int) -> int:
    if i < len(text) and text[i] == ".":
        i += 1
    while i < len(text) and text[i] in SPACES:
        i += 1
    return i


def _digit_after(text: str, i: int) -> bool:
    while i < len(text) and text[i] in SPACES:
        i += 1
    return i < len(text) and text[i].isdigit()


_PLURAL_VERBS = frozenset({"are", "were", "have", "sind", "waren", "haben"})


def find_double_names(text: str) -> Iterator[Span]:
    """A double surname without a title ("Lindemann-Brosig hat geschrieben", "the
    Harrington-Smythes are hosting", "Jasper Whitcombe-Hale"): two capitalised parts, no
    thing ("Goethe-Institut"), and a verb of a person after it or a first name before it."""
    low = lowered(text)
    hyphen = text.find("-")
    while hyphen != -1:
        start, end = compound_start(text, hyphen + 1), compound_end(text, hyphen)
        hyphen = text.find("-", max(end, hyphen + 1))
        parts = text[start:end].split("-")
        if (
            len(parts) != 2
            or min(len(parts[0]), len(parts[1])) < 3
            or (start and text[start - 1].isalnum())
            or (end < len(text) and text[end].isalnum())
        ):
            continue
        first, second = parts
        if (
            not (first.istitle() and second.rstrip("s").istitle())
            or _names_a_thing(low, start, end)
            or first.lower() in NOT_A_NAME
        ):
            continue
        following = next_word(text, end)
        after = low[following[0] : following[1]] if following is not None else ""
        given = _word_before(text, start)
        verb_after = after in _VERBS_AFTER or after in _PLURAL_VERBS
        if given is not None and not (
            capitalised(text, *given)
            and low[given[0] : given[1]] not in FUNCTION_WORDS
            and (not _sentence_start(text, given[0]) or (verb_after and _given_name(low, given)))
        ):
            given = None
        if given is not None:
            yield Span(given[0], end, "PERSON", text[given[0] : end])
        elif verb_after:
            yield Span(start, end, "PERSON", text[start:end])


def _given_name(low: str, given: tuple[int, int]) -> bool:
    """Is the word at a sentence's start, before a double surname and a person's verb
    ("Tobias Müller-Lüdenscheidt hat angerufen"), a first name? Not a function word, a word
    for people or a role ("Nachbarin …"), nor an English word ("Also …", "Yesterday …")."""
    word = low[given[0] : given[1]]
    return not (
        word in _PERSON_WORDS or word in PEOPLE_NOUNS or word in NOT_A_NAME or word in dictionary()
    )


def find_group_members(text: str) -> Iterator[Span]:
    """A name before a group of people ("Rosa aus dem yogakurs", "Heide vom wanderverein",
    "April from accounting", "Rose from my book club"): a capitalised word (and one more
    before it), no article before it, no noun for people in general ("Kinder aus der
    Kita")."""
    for start, _end, _word in occurrences(text, GROUP_BEFORE | {"from"}):
        name = _word_before(text, start)
        if name is None or not capitalised(text, *name):
            continue
        low = lowered(text)
        word = low[name[0] : name[1]]
        if word in PEOPLE_NOUNS or word in FUNCTION_WORDS:
            continue
        before = previous_words(text, name[0], 1)
        if before and before[0] in DETERMINERS:
            continue
        if not group_after(text, name[1]):
            continue
        first = name[0]
        other = _word_before(text, first)
        if (
            other is not None
            and capitalised(text, *other)
            and low[other[0] : other[1]] not in FUNCTION_WORDS | PEOPLE_NOUNS
            and not _sentence_start(text, other[0])
        ):
            first = other[0]  # "Tom Meier aus dem Kurs"
        yield Span(first, name[1], "PERSON", text[first : name[1]])


def _word_before(text: str, start: int) -> tuple[int, int] | None:
    i = start
    while i > 0 and text[i - 1] in SPACES:
        i -= 1
    if i == start or i == 0 or not text[i - 1].isalpha():
        return None
    return compound_start(text, word_start(text, i)), i


def _sentence_start(text: str, start: int) -> bool:
    i = start
    while i > 0 and text[i - 1] in SPACES:
        i -= 1
    return i == 0 or text[i - 1] in ".!?\n"


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
    if joiner is not None and low[joiner[0] : joiner[1]] in EN_NAME_JOINERS:
        other = next_word(text, joiner[1])
        if other is not None and _english_name(text, *other):
            yield Span(other[0], other[1], "PERSON", text[other[0] : other[1]])
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
    if not (
        len(token) > 1
        and token[0].isupper()
        and token[1:].islower()
        and token.isascii()
        and low not in EN_NOT_NAMES
        and low not in NOT_A_NAME
    ):
        return False
    vocabulary = dictionary()
    return low not in vocabulary and low.rstrip("s") not in vocabulary


def _english_in_context(text: str) -> Iterator[Span]:
    candidates: set[tuple[int, int]] = set()
    low = lowered(text)
    for start, end, word in occurrences(text, EN_PERSON_BEFORE):  # "met Priya"
        following = next_word(text, end)
        if following is not None and not any(
            (before, word) in EN_THING_BEFORE_PAIRS for before in previous_words(text, start, 1)
        ):  # "paid with Klarna"
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
            after = low[following[0] : following[1]] if following is not None else ""
            if not (
                (word, after) in EN_PERSON_AFTER_PAIRS
                or (word in EN_PROGRESSIVE and after.endswith("ing"))
            ):
                continue
        i = start  # "Jonathan said": the word before
        while i > 0 and text[i - 1] in SPACES:
            i -= 1
        if i < start and i > 0 and text[i - 1].isalpha():
            candidates.add((word_start(text, i), i))
    for start, end in sorted(candidates):
        if _english_name(text, start, end):
            yield Span(start, end, "PERSON", text[start:end])
