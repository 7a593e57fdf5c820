"""What a word is a form of, for the narration's check (`app.journal.support`): its lemmas.

The lemmas are simplemma's (German and English); this module adds only what the library's
dictionary misses, each a rule of the grammar checked against that dictionary: a German
participle's verb ("gejoggt", "gerannt"), a German lemma the dictionary prefixed wrongly
("gegessen" read as "weiteressen"), an English "-ing" form's verb ("feeling" read as the
noun) — and, where no rule fits, the few English past forms it reads as nouns only
(`EN_PAST`). And what a word with an apostrophe or a hyphen asserts (`units`).
"""

from __future__ import annotations

import functools
import re

import simplemma

LANGS = ("de", "en")
# The shortest end a wrongly prefixed lemma shares with its word that counts ("essen").
SHARED_END = 5
NEGATED = re.compile(r"n['’]t$", re.IGNORECASE)
# English past forms simplemma 2.0 reads as nouns or adjectives only ("felt" the cloth, "left"
# the side), measured against its whole list of irregular verbs: no rule of the grammar
# finds their verb, so they stand here (`test_support_property` holds that the library
# still misses each).
EN_PAST = {
    "felt": "feel", "thought": "think", "left": "leave", "gone": "go", "broke": "break",
    "shook": "shake", "shot": "shoot", "won": "win", "drunk": "drink", "rose": "rise",
    "bit": "bite", "bent": "bend", "bound": "bind", "bore": "bear", "swore": "swear",
}  # fmt: skip


@functools.lru_cache(maxsize=65536)
def lemmas(word: str) -> frozenset[str]:
    """Every lemma `word` may have, lower-cased: the word itself, the library's in both
    languages, and what the rules below add."""
    lower = word.lower()
    found = {lower}
    for lang in LANGS:
        # Capitalised too: a German adverb made of a noun is read as the noun ("abends",
        # "mittags": "Abend", "Mittag").
        for form in {word, lower, word.capitalize()}:
            found.add(simplemma.lemmatize(form, lang=lang).lower())
    found |= _participle_verbs(lower) | _ing_verbs(lower)
    if lower in EN_PAST:
        found.add(EN_PAST[lower])
    found |= {end for lemma in list(found) if (end := _kept_end(lower, lemma))}
    return frozenset(found)


def _participle_verbs(lower: str) -> set[str]:
    """The verbs a German past participle ("ge" + stem + "en"/"t", a separable particle
    before it: "gejoggt", "eingekauft", "gerannt") is a form of, where the dictionary has no
    entry or a wrong one: the stem's infinitive ("joggen") or, for a mixed verb, its past
    ("rannte": "rennen"), each only when the dictionary knows that form."""
    found: set[str] = set()
    for at in range(len(lower) - 5):
        if not lower.startswith("ge", at):
            continue
        head, stem = lower[:at], lower[at + 2 :]
        for end in ("en", "t"):
            if stem.endswith(end) and len(stem) - len(end) >= 2:
                base = head + stem[: -len(end)]
                for form in (f"{base}en", f"{base}te"):
                    if simplemma.is_known(form, lang="de"):
                        found.add(simplemma.lemmatize(form, lang="de").lower())
    return found


def _ing_verbs(lower: str) -> set[str]:
    """The verb of an English "-ing" form the dictionary reads as a noun ("feeling"): the
    stem, with "e" ("making") or one of a doubled consonant ("running") when that is a verb
    the dictionary knows as its own lemma."""
    if not lower.endswith("ing") or len(lower) < 6:
        return set()
    stem = lower[:-3]
    forms = [stem, f"{stem}e"] + ([stem[:-1]] if stem[-1] == stem[-2] else [])
    return {
        form
        for form in forms
        if simplemma.is_known(form, lang="en") and simplemma.lemmatize(form, lang="en") == form
    }


def _kept_end(lower: str, lemma: str) -> str | None:
    """Of a German lemma that begins otherwise than its word (a particle the dictionary
    added: "gegessen" read as "weiteressen"), the end they share when that is a word the
    dictionary knows ("essen")."""
    if lemma[:2] == lower[:2]:
        return None
    size = 0
    while size < min(len(lemma), len(lower)) and lemma[-1 - size] == lower[-1 - size]:
        size += 1
    end = lemma[len(lemma) - size :]
    return end if size >= SHARED_END and simplemma.is_known(end, lang="de") else None


def units(token: str) -> list[str]:
    """What a token with an apostrophe or a hyphen asserts, part by part: "didn't" a
    negation ("not"), "I'm" and "Monday's" their word (the clitic asserts nothing), "Elm-Street"
    each part."""
    if NEGATED.search(token):
        return ["not"]
    if "'" in token or "’" in token:
        return [re.split(r"['’]", token)[0]]
    return [part for part in token.split("-") if part]
