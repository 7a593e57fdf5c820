"""Person names: the user's registered people, and unregistered names in a person context.

Registered (`NameIndex`, one compiled pattern per registry): a name or alias matches in any
case at word bounds, also before a genitive `s` ("Annas"; the `s` stays outside the mask),
and each part of a full name that is a name matches on its own ("Özdemir" of
"Frau Dr. Özdemir"; never "Frau", "Dr.", "Onkel"). A registered name that is also an
ordinary word (`rules.HOMONYMS`) is decided by its context, by the rules in `rules.py`:
a person word before it or a verb of speaking after it makes it a person; its family's
words ("am Freitag", "Rosen aus dem Garten", "pizza Margherita") make it the ordinary word.

Unregistered: a capitalised name after an honorific or role (`Herr`, `Frau`, `Dr.`, `Mr`,
`Onkel`, `Familie` …), after "klingel bei" and the like, and English capitalised words
mid-sentence in a person context ("met Priya", "Jonathan said") that are no dictionary word
(the `english-words` list).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence

from app.llm.privacy.rules import (
    BELL_WORDS, EN_PERSON_AFTER, EN_PERSON_BEFORE, FAMILIES, HOMONYMS, HONORIFICS, PERSON_AFTER,
)
from app.llm.privacy.spans import Span, word_after, words_before

_CAP = r"[A-ZÄÖÜ][a-zäöüßéèáàóòíìúùçñ'’-]+"
_NAME = rf"{_CAP}(?:-{_CAP})*"
_TITLES = r"(?:(?:Dr|Prof|Dipl)\.?[ \u00a0]+)*"
_HONORIFIC_WORDS = "|".join(sorted((re.escape(w) for w in HONORIFICS), key=len, reverse=True))
_AFTER_HONORIFIC = re.compile(
    rf"(?<![\w.])(?i:{_HONORIFIC_WORDS})(?<=[\w.])[ \u00a0]+{_TITLES}(?P<name>{_NAME}(?:[ \u00a0]+{_NAME})?)")
_AFTER_BELL = re.compile(
    rf"(?<!\w)(?i:{'|'.join(sorted(BELL_WORDS))})[ \u00a0]+(?i:bei)[ \u00a0]+(?P<name>{_NAME})")
_EN_CANDIDATE = re.compile(rf"(?<![\w.'’-])(?P<name>[A-Z][a-z]+(?:-[A-Z][a-z]+)?)(?![\w'’-])")
_NOT_A_NAME = frozenset(HONORIFICS) | frozenset(FAMILIES["weekday"].before)
# Capitalised words that are never a person in an English sentence: weekdays, months,
# languages, holidays, big brands (public names stay).
EN_NOT_NAMES = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
    "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "english", "german", "french", "spanish", "italian", "christmas",
    "easter", "google", "facebook", "instagram", "whatsapp", "netflix", "spotify", "youtube",
    "microsoft", "amazon", "tesla", "uber", "ikea", "lidl", "aldi", "zoom", "iphone", "ipad",
    "chatgpt", "openai", "tiktok", "linkedin", "paypal", "ebay", "dhl", "berlin", "london",
    "paris", "munich", "hamburg", "vienna", "europe", "germany", "america", "england",
})


@functools.cache
def dictionary() -> frozenset[str]:
    """English words that are ordinary words (lower case in the word list)."""
    from english_words import get_english_words_set

    return frozenset(w for w in get_english_words_set(["web2"], lower=False, alpha=True)
                     if w.islower())


def name_terms(names: Iterable[str]) -> tuple[str, ...]:
    """Every term a registry entry matches by: the entry itself, and its parts that are
    names (no honorifics, no titles, at least two letters); longest first."""
    terms: set[str] = set()
    for name in names:
        name = " ".join(name.split())
        if len(name) < 2:
            continue
        parts = [p for p in name.split(" ") if len(p.strip(".")) >= 2
                 and p.casefold() not in HONORIFICS and p.casefold().rstrip(".") not in
                 {"dr", "prof", "dipl"}]
        # Every run of consecutive parts: "Hans Peter Krüger" → "Hans Peter", "Peter
        # Krüger", "Krüger" …; "Frau Dr. Özdemir" → "Özdemir" (the honorific stays visible).
        for first in range(len(parts)):
            for last in range(first + 1, len(parts) + 1):
                terms.add(" ".join(parts[first:last]))
    return tuple(sorted(terms, key=lambda t: (-len(t), t.casefold())))


class NameIndex:
    """The compiled pattern of one registry (built once per registry change)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.terms = name_terms(names)
        self.folded = frozenset(t.casefold() for t in self.terms)
        self.pattern = (re.compile(
            r"(?<![\w@.])(?:" + "|".join(re.escape(t) for t in self.terms) + r")(?=s?(?![\w@]))",
            re.IGNORECASE) if self.terms else None)

    def find(self, text: str) -> Iterator[Span]:
        if self.pattern is None:
            return
        for match in self.pattern.finditer(text):
            if is_person(text, match.start(), match.end()):
                yield Span(match.start(), match.end(), "PERSON", match.group(0))


def is_person(text: str, start: int, end: int) -> bool:
    """Is the name at `text[start:end]` a person here, or the ordinary word it also is?"""
    value = text[start:end]
    families = HOMONYMS.get(value.casefold())
    if not families:
        return True
    before = [w.casefold() for w in words_before(text, start, 2)]
    previous = before[0] if before else ""
    after = word_after(text, end).casefold()
    # The order is the rule: a person word before it is strongest, then the family's word
    # before it ("am Freitag kommt …"), then a verb after it, then the rest of the family.
    if previous in HONORIFICS or (previous == "bei" and len(before) > 1
                                  and before[1] in BELL_WORDS):
        return True
    rows = [FAMILIES[name] for name in families]
    if any(previous in family.before for family in rows):
        return False
    if after in PERSON_AFTER:
        return True
    for family in rows:
        if family.lower and value.islower():
            return False
        if after in family.after or (family.number_after and after[:1].isdigit()):
            return False
    return True


def find_in_context(text: str) -> Iterator[Span]:
    """Unregistered names after an honorific, role or bell word."""
    for pattern in (_AFTER_HONORIFIC, _AFTER_BELL):
        for match in pattern.finditer(text):
            start, end = match.span("name")
            words = match.group("name").split()
            if words[0].casefold() in _NOT_A_NAME:
                continue
            if len(words) > 1 and words[1].casefold() in _NOT_A_NAME:
                end = start + len(words[0])
            yield Span(start, end, "PERSON", text[start:end])


def find_english(text: str) -> Iterator[Span]:
    """English capitalised non-dictionary words mid-sentence in a person context."""
    words = None
    for match in _EN_CANDIDATE.finditer(text):
        name = match.group("name")
        folded = name.casefold()
        if folded in EN_NOT_NAMES:
            continue
        before = words_before(text, match.start(), 1)
        after = word_after(text, match.end())
        if not ((before and before[0].casefold() in EN_PERSON_BEFORE) or after in EN_PERSON_AFTER):
            continue
        words = words if words is not None else dictionary()
        if folded in words or folded.rstrip("s") in words:
            continue
        yield Span(match.start(), match.end(), "PERSON", name)
