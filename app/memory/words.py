"""Words of a text as long-term memory compares them: for the support check of a new memory
(its content words must occur in the user's own messages) and for the retrieval query.

A content word is a word of at least three letters that is not a function word of German or
English (the offline lexicon's `STOPWORDS`, plus the words a model uses to speak *about* the
user: "Mensch", "Nutzer", "user", …). Words compare casefolded, with umlauts folded, and two
words match when they share a stem up to short inflection endings (`same_word`).
"""

from __future__ import annotations

import re

from app.llm.offline.lexicon import STOPWORDS

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)
_FOLD = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})
MIN_LETTERS = 3
MIN_STEM = 4
MAX_ENDING = 3  # letters an inflected form may add to its stem ("Leipzig" → "Leipziger")

# Words a model uses to refer to the person it remembers something about: never required
# to occur in the person's own words.
REFERENCE_WORDS = frozenset(
    [
        "mensch",
        "menschen",
        "nutzer",
        "nutzerin",
        "nutzers",
        "user",
        "users",
        "person",
        "personen",
        "benutzer",
        "benutzerin",
        "jemand",
        "jemandes",
        "heisst",
        "hat",
        "haben",
        "ist",
        "sind",
        "seine",
        "seiner",
        "seinen",
        "ihrem",
        "ihres",
        "ihm",
        "ihn",
    ]
)


def fold(word: str) -> str:
    return word.casefold().translate(_FOLD)


def words(text: str) -> list[str]:
    return [fold(w) for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """The text's content words, folded, in order, each once."""
    stop = _FOLDED_STOPWORDS
    return list(
        dict.fromkeys(
            w for w in words(text) if len(w) >= MIN_LETTERS and w not in stop and not w.isdigit()
        )
    )


def query_terms(text: str) -> list[str]:
    """Text search terms for `text` (each a substring to look for, see
    `app.storage.dialect.contains_any`): its content words casefolded (umlauts kept: the
    index holds the text as written), long words shortened by up to `MAX_ENDING` letters to
    a stem of at least five (so "Leipziger" also finds "Leipzig"), each once."""
    stop = _FOLDED_STOPWORDS
    terms = []
    for raw in _WORD.findall(text):
        word = raw.casefold()
        if len(word) < MIN_LETTERS or fold(word) in stop or word.isdigit():
            continue
        if len(word) > 5:
            word = word[: max(5, len(word) - MAX_ENDING)]
        terms.append(word)
    return list(dict.fromkeys(terms))


def _numbers(text: str) -> list[str]:
    return [w for w in words(text) if w.isdigit()]


def same_word(a: str, b: str) -> bool:
    """Two folded words are the same word: equal, or sharing a stem of at least `MIN_STEM`
    letters after which each has at most `MAX_ENDING` letters of its own ("wohnt" and
    "wohnen", "Leipzig" and "Leipziger"; not "Schwester" and "Schweiz")."""
    if a == b:
        return True
    stem = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        stem += 1
    return stem >= MIN_STEM and len(a) - stem <= MAX_ENDING and len(b) - stem <= MAX_ENDING


def unsupported_words(claim: str, source: str) -> list[str]:
    """The content words (and numbers) of `claim` that do not occur in `source`."""
    seen = words(source)
    missing = [
        w
        for w in content_words(claim)
        if w not in REFERENCE_WORDS and not any(same_word(w, s) for s in seen)
    ]
    missing += [n for n in _numbers(claim) if n not in seen]
    return missing


_FOLDED_STOPWORDS = frozenset(fold(w) for w in STOPWORDS)
