"""The narration checked against the artifact it was written from (issue 40, design §8).

Stage 2 may rephrase; it may not add. Before a draft is shown, its text is cut into
sentences (each line of a list or paragraph, then `simplemma.split_sentences`), and each
sentence's assertive elements — every word that is not a pure connective, pronoun, article,
auxiliary or diary frame (`FUNCTION_WORDS`), so names, places, numbers, times, negations and
the content words that carry a fact or a feeling — must be found in the verified sources:
the artifact's lines, the base a redraft revises (the user's own text) and the day's date.

A word is found when its lemma (simplemma, German and English: "ging" and "gehe" are both
"gehen", "Kinos" is "Kino", "went" is "go") is a lemma of a source word, when it is a part
of a source compound ("Liste" in "Einkaufsliste"), or when it is a compound made of source
words ("Kinoabend" from "Kino" and "Abend"); a count when the sources hold it in digits or
in words ("sechs", "6"); a time (`app.journal.times.spans`: "6:30 Uhr", "halb sieben", "um
sechs", "half past nine") when a source states the same time, either half of the day where
the words leave it open ("halb eins" for 0:30 and 12:30); the day's date and its numbers
("14. Mai") only as a date. The lemmas are the library's, with what its dictionary misses
found by the grammar (`app.journal.wordforms`: "gejoggt", "gegessen", "felt"); only the
joining of compound parts is this module's, because no installable library splits German
compounds well.

A sentence with any unfound element is `unsupported`, naming them; the others name the
source lines they drew on (the provenance a draft shows, `Sentence.sources`).

One module: the sentence check and a version's sentence map read one sentence cut and one
index of the sources (`Sources`).

A saved entry keeps that map: each sentence of a version's text is the draft's (`origin`
draft, with the draft's lines) when the draft it was taken from — or the version it edits —
has the same sentence (the same words, whatever the whitespace), else the user's edit
(`VersionSentence`, `version_map`).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Sequence
from typing import Final, Literal

import msgspec
import simplemma

from app.journal import times, wordforms
from app.journal.artifact import DONE_HEADINGS, VerifiedArtifact, split_done_list
from app.journal.wordforms import LANGS, NEGATED

# The source id of the base a redraft revises (the user's own stored text).
BASE_ID = "base"
# The pseudo-sources of what this machine adds around a narration: the day's date in its
# forms, and the done list's heading. Never named as a sentence's source.
DATE_ID = "date"
FRAME_ID = "frame"
_PSEUDO = frozenset((DATE_ID, FRAME_ID))
# The shortest compound part (or part of a source compound) that counts: shorter ones match
# by chance ("rat" in "Fahrrad").
MIN_PART = 4

# Words that assert nothing on their own: articles, pronouns, prepositions, conjunctions,
# connectives of order, auxiliaries and modals, and the diary's frame ("Tag", "heute").
# Negations are NOT here: "nicht" changes what a sentence says, so it must be in a source.


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTION_WORDS = _words(
    """
    der die das den dem des ein eine einer einen einem eines
    ich mich mir mein meine meiner meinen meinem meines wir uns unser unsere unseren unserem
    du dich dir dein deine er ihn ihm sein seine seinen seinem sie ihr ihre ihren ihrem es
    man sich selbst jemand etwas alles viel viele einige
    und oder aber doch denn sondern sowie auch noch schon nur so dann danach davor später seitdem
    zuerst erst anschließend schließlich endlich dabei dazu außerdem also jedoch trotzdem
    weil da dass ob wenn als wie wo was wer wann warum woran worüber damit darum deshalb
    in im ins an am ans auf aus bei beim mit nach von vom vor zu zum zur über unter um
    durch für gegen ohne bis seit während neben zwischen hinter
    bin bist ist sind seid war warst waren wart gewesen wäre wären
    habe hast hat haben habt hatte hattest hatten hattet gehabt hätte hätten
    werde wirst wird werden werdet wurde wurden worden würde würden
    kann kannst können konnte konnten muss musst müssen musste mussten
    will willst wollen wollte wollten soll sollst sollen sollte sollten
    darf dürfen durfte mag mochte möchte möchten
    sehr ganz ja eben wohl mal einmal wieder immer hier dort heute tag tages tagebuch
    the a an i me my mine myself we us our ours you your he him his she her it its they
    them their this that these those there here someone something everything much many
    and or but so then afterwards after before later first finally also too still just
    because since as when while if whether what who whom which where why how
    in on at to into onto from of by with for about over under through without until
    during between behind near up down out off
    am is are was were be been being have has had having do does did done
    will would shall should can could may might must
    very quite really again always today day diary
    """
)
# Numbers in words, both ways ("sechs Uhr" for "6:00", "drei" for "3").
NUMBER_WORDS = {
    "eins": "1", "zwei": "2", "drei": "3", "vier": "4", "fünf": "5", "sechs": "6",
    "sieben": "7", "acht": "8", "neun": "9", "zehn": "10", "elf": "11", "zwölf": "12",
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
}  # fmt: skip
# Words that say a thing is uncertain: any of them stands for any other ("vielleicht" for "glaube
# ich"), found when a source holds one — the brief asks to keep the user's uncertainty.
HEDGES = _words(
    "vielleicht wahrscheinlich vermutlich eventuell glaube glaubte glaubst unsicher "
    "maybe perhaps probably possibly think thought guess unsure"
)
_HEDGE = "?hedge"
_MONTHS = {
    "de": "januar februar märz april mai juni juli august september oktober november dezember",
    "en": "january february march april may june july august september october november december",
}
_WEEKDAYS = {
    "de": "montag dienstag mittwoch donnerstag freitag samstag sonntag",
    "en": "monday tuesday wednesday thursday friday saturday sunday",
}
# A word (with inner hyphens and apostrophes) or a number (with inner ":" "." ","); nothing else.
_TOKEN = re.compile(r"\d+(?:[:.,]\d+)*|[^\W\d_]+(?:['’-][^\W\d_]+)*")
_LINKS = ("", "s", "n", "en", "es", "e")
_DOTTED = re.compile(r"\d+\.\d+")


class Sentence(msgspec.Struct, omit_defaults=True):
    """A sentence of a draft: its text, the source lines it drew on (their ids, in source
    order) and, when it is not supported, the elements no source holds."""

    text: str
    sources: list[str] = []
    unsupported: list[str] = []


class Support(msgspec.Struct):
    """A draft's map (`journal_drafts.support_json`): each sentence of its text with the lines
    it drew on, and the model's sentences left out (each naming what no line holds)."""

    sentences: list[Sentence] = []
    left_out: list[Sentence] = []


# A sentence of an entry version is the model's, as the draft it was taken from had it, or
# the user's own words (typed, changed, or copied back from what a draft left out).
DRAFT: Final = "draft"
EDIT: Final = "edit"


class VersionSentence(msgspec.Struct, forbid_unknown_fields=True):
    """A sentence of an entry version (`journal_entry_versions.provenance_json`): `origin`
    `draft` — as the draft `draft_id` had it, with the ids of the lines it drew on
    (`sources`, the ids of that draft's `sources`) — or `edit`, the user's own words (no
    sources, no draft)."""

    text: str
    sources: list[str]
    origin: Literal["draft", "edit"]
    draft_id: str | None


def same_sentence(text: str) -> str:
    """A sentence as two versions are compared: its words, whatever the whitespace."""
    return " ".join(text.split())


def draft_map(draft_id: str, text: str, support: Support) -> list[VersionSentence]:
    """A draft's sentences as an entry version maps them (`origin` draft). A draft from
    before its support map (`'{}'`) has its sentences, without lines."""
    found = support.sentences or [Sentence(s) for s in sentences(text)]
    return [VersionSentence(s.text, list(s.sources), DRAFT, draft_id) for s in found]


def version_map(text: str, known: Iterable[VersionSentence]) -> list[VersionSentence]:
    """Each sentence of a version's `text` as `known` (a draft's map, or the map of the
    version it edits) has it — the same words after whitespace — else the user's edit."""
    by_words: dict[str, VersionSentence] = {}
    for mapped in known:
        by_words.setdefault(same_sentence(mapped.text), mapped)
    found = []
    for sentence in sentences(text):
        was = by_words.get(same_sentence(sentence))
        if was is None:
            found.append(VersionSentence(sentence, [], EDIT, None))
        else:
            found.append(msgspec.structs.replace(was, text=sentence))
    return found


def sentences(text: str) -> list[str]:
    """`text` cut into sentences: each non-empty line, then each sentence of a line."""
    found: list[str] = []
    for line in text.splitlines():
        found += [s.strip() for s in simplemma.split_sentences(line) if s.strip()]
    return found


def _number(token: str) -> str:
    """A number as compared: leading zeros off each part ("06:00" → "6:0")."""
    return ":".join(str(int(part)) for part in re.split(r"[:.,]", token))


def _tokens(text: str, timed: bool = True) -> tuple[list[times.Span], list[str]]:
    """The times `text` states (none unless `timed`), and its other tokens (a time's words
    are in the time)."""
    normal = times.normalize(text)
    spans = times.spans(normal) if timed else []
    tokens = [
        found[0]
        for found in _TOKEN.finditer(normal)
        if not any(span.start <= found.start() < span.end for span in spans)
    ]
    return spans, tokens


def _same_time(one: times.Span, other: times.Span) -> bool:
    if one.minutes == other.minutes:
        return True
    either = one.either_half or other.either_half
    return either and one.minutes % 720 == other.minutes % 720


class Sources:
    """What the verified sources hold, by source id: words' lemmas, whole words, counts and
    times; and the day's date (`DATE_ID`): its names and its numbers, held apart. To look a
    token up without reading every source (a day of 2 000 lines narrated in parts,
    app.journal.parts): which sources hold each lemma and each count."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.lemmas: dict[str, set[str]] = {}
        self.words: dict[str, set[str]] = {}
        self.numbers: dict[str, set[str]] = {}
        self.times: dict[str, list[times.Span]] = {}
        self.position = {source_id: k for k, source_id in enumerate(texts)}
        self._by_lemma: dict[str, set[str]] = {}
        self._by_number: dict[str, set[str]] = {}
        for source_id, text in texts.items():
            lemmas: set[str] = set()
            words: set[str] = set()
            numbers: set[str] = set()
            # The date's forms are no time ("14.10" is the 14th of October).
            self.times[source_id], tokens = _tokens(text, timed=source_id != DATE_ID)
            for token in tokens:
                if token[0].isdigit():
                    whole = _number(token)
                    numbers.update([whole, *whole.split(":")])
                    continue
                lower = token.lower()
                words.add(lower)
                # The done list's heading holds itself only ("Done" is no "do" of "didn't").
                lemmas |= wordforms.lemmas(token) if source_id != FRAME_ID else {lower}
                parts = wordforms.units(token)
                for unit in parts if parts != [token] else []:
                    lemmas |= wordforms.lemmas(unit)  # "didn't" holds "not", "Monday's" "Monday"
                if lower in NUMBER_WORDS:
                    numbers.add(NUMBER_WORDS[lower])
                if lower in HEDGES:
                    lemmas.add(_HEDGE)
            self.lemmas[source_id], self.words[source_id] = lemmas, words
            self.numbers[source_id] = numbers
        # The date's numbers are no count: "14" is held as the 14th of the month only.
        self.date_numbers = self.numbers.pop(DATE_ID, set())
        self.date_names = self.words.get(DATE_ID, set())
        for source_id, lemmas in self.lemmas.items():
            for lemma in lemmas:
                self._by_lemma.setdefault(lemma, set()).add(source_id)
        for source_id, numbers in self.numbers.items():
            for number in numbers:
                self._by_number.setdefault(number, set()).add(source_id)
        self._timed = {i: spans for i, spans in self.times.items() if spans}

    def holding_time(self, span: times.Span) -> set[str]:
        """The ids of the sources that state the time `span` states."""
        return {i for i, spans in self._timed.items() if any(_same_time(span, s) for s in spans)}

    def holding_date(self, token: str, named: bool) -> bool:
        """Is the number `token` the day's date: in day-and-month form ("14.5."), or any of
        its numbers in a sentence that `named` the month or the weekday?"""
        number = _number(token)
        return number in self.date_numbers and (named or ":" in number)

    def _holding(self, keys: Iterable[str], index: dict[str, set[str]]) -> set[str]:
        """The ids of the sources that hold any of `keys` (no order: a sentence orders the
        ids it drew on once, `check_sentence`)."""
        return set().union(*(index.get(key, ()) for key in keys))

    def holding(self, token: str) -> set[str]:
        """The ids of the sources that hold `token` (empty: none does)."""
        if token[0].isdigit():
            return self._holding([_number(token)], self._by_number)
        lower = token.lower()
        if lower in NUMBER_WORDS:
            held = self._holding([NUMBER_WORDS[lower]], self._by_number)
            if held:
                return held
        lemmas = wordforms.lemmas(token) | ({_HEDGE} if lower in HEDGES else set())
        held = self._holding(lemmas, self._by_lemma)
        if held:
            return held
        held = {i for i in self.words if self._in_compound(lemmas, i)}
        return held or self._compound_of(lower)

    def _in_compound(self, lemmas: frozenset[str] | set[str], source_id: str) -> bool:
        """A part of a source's compound, or of its lemma: "liste" in "einkaufsliste"
        ("essen" in the library's "weiteressen" for "gegessen")."""
        parts = [lemma for lemma in lemmas if len(lemma) >= MIN_PART]
        known = self.words[source_id] | self.lemmas[source_id]
        return any(part in word for part in parts for word in known if len(word) > len(part))

    def _compound_of(self, lower: str) -> set[str]:
        """The sources whose words make up `lower`, a compound ("kinoabend"), or none."""
        for cut in range(MIN_PART, len(lower) - MIN_PART + 1):
            head, tail = lower[:cut], lower[cut:]
            for link in _LINKS:
                if link and not head.endswith(link):
                    continue
                stem = head[: len(head) - len(link)] if link else head
                first, last = self._part(stem), self._part(tail) or self._compound_of(tail)
                if first and last:
                    return first | last
        return set()

    def _part(self, part: str) -> set[str]:
        if len(part) < MIN_PART:
            return set()
        lemmas = wordforms.lemmas(part) | wordforms.lemmas(part.capitalize())
        return self._holding(lemmas, self._by_lemma)


def date_words(date: str) -> str:
    """The day's date in every way a narration may write it: ISO, its numbers, the month's
    and the weekday's names in German and English."""
    day = datetime.date.fromisoformat(date)
    names = [
        f"{_MONTHS[lang].split()[day.month - 1]} {_WEEKDAYS[lang].split()[day.weekday()]}"
        for lang in LANGS
    ]
    numbers = [str(day.year), str(day.month), str(day.day), f"{day.day}.{day.month}"]
    return " ".join([date, *numbers, f"{day.day}.{day.month}.{day.year}", *names])


def source_texts(date: str, artifact: VerifiedArtifact) -> dict[str, str]:
    """The verified sources a narration may draw on, by id: every line of the artifact, the
    base a redraft revises, and the frame (the day's date, the done list's heading)."""
    texts = {line.source_id: line.text for line in artifact.sources}
    if artifact.base is not None:
        texts[BASE_ID] = split_done_list(artifact.base.text)[0]
    texts[DATE_ID] = date_words(date)
    texts[FRAME_ID] = " ".join(DONE_HEADINGS)
    return texts


def _holding_word(token: str, sources: Sources) -> set[str] | None:
    """The sources holding a word, or the union of those holding each of its units
    (`_units`: a negated one, "didn't", only as its negation); None when some unit is held
    by none."""
    held = set() if NEGATED.search(token) else sources.holding(token)
    if held:
        return held
    parts = [u for u in wordforms.units(token) if u.lower() not in FUNCTION_WORDS]
    if parts == [token]:
        return None
    found: set[str] = set()
    for unit in parts:
        part = sources.holding(unit)
        if not part:
            return None
        found.update(part)
    return found


def check_sentence(text: str, sources: Sources) -> Sentence:
    drew: set[str] = set()
    missing: list[str] = []
    spans, tokens = _tokens(text)
    named = any(token.lower() in sources.date_names for token in tokens)
    for span in spans:
        at = sources.holding_time(span)
        if at:
            drew.update(at)
        elif _DOTTED.fullmatch(span.text) and sources.holding_date(span.text, True):
            continue  # "14.5." the day's date, not a time
        elif span.text not in missing:
            missing.append(span.text)
    for token in tokens:
        if token.lower() in FUNCTION_WORDS:
            continue
        held: set[str] | None
        if token[0].isdigit():
            if sources.holding_date(token, named):
                continue
            held = sources.holding(token) or None
        else:
            held = _holding_word(token, sources)
        if held is not None:
            drew.update(held)  # empty: a word that asserts nothing ("I'm")
        elif token not in missing:
            missing.append(token)
    return Sentence(text, sorted(drew - _PSEUDO, key=sources.position.__getitem__), missing)


def check(text: str, date: str, artifact: VerifiedArtifact) -> list[Sentence]:
    """Every sentence of `text`, each with the sources it drew on or what none holds."""
    sources = Sources(source_texts(date, artifact))
    return [check_sentence(s, sources) for s in sentences(text)]


def unsupported(checked: Iterable[Sentence]) -> list[Sentence]:
    return [s for s in checked if s.unsupported]


def supported_text(text: str, checked: Sequence[Sentence]) -> str:
    """`text` without its unsupported sentences, its lines and paragraphs kept; a line left
    empty goes, and so do the blank lines it leaves twice."""
    cut = {s.text for s in checked if s.unsupported}
    kept: list[str] = []
    for line in text.splitlines():
        parts = [s.strip() for s in simplemma.split_sentences(line) if s.strip()]
        if not parts:
            if kept and kept[-1] != "":
                kept.append("")
            continue
        left = [p for p in parts if p not in cut]
        if left:
            kept.append(" ".join(left))
    return "\n".join(kept).strip()
