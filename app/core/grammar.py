"""A little grammar for the server's own sentences: joining items ("Milch, Brot und Eier") and
the number of a list item, so that a sentence agrees with it ("Milch ist gestrichen", "Eier
sind gestrichen", "2 Äpfel stehen drauf"; "eggs are crossed off").

`plural` reads what a shopping or to-do list holds: a count ("2", "zwei", "six"), the word
itself among the common plurals of such lists, and the endings that mark a plural in German
("-ungen", "-eln", …) or in English ("eggs", not "hummus"). A word it does not know is
singular — the safe guess for a mass noun ("Milch", "Mehl", "rice").
"""

from __future__ import annotations

import re

from app.core.i18n import language_of

_NUMBER = re.compile(r"^\s*(?P<n>\d+(?:[.,]\d+)?|[a-zäöüß]+)\b", re.I)
_COUNTS = {
    "ein": 1,
    "eine": 1,
    "einen": 1,
    "one": 1,
    "a": 1,
    "an": 1,
    "zwei": 2,
    "drei": 3,
    "vier": 4,
    "fünf": 5,
    "sechs": 6,
    "sieben": 7,
    "acht": 8,
    "neun": 9,
    "zehn": 10,
    "zwölf": 12,
    "paar": 2,
    "einige": 2,
    "ein paar": 2,
    "mehrere": 2,
    "viele": 2,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twelve": 12,
    "dozen": 12,
    "some": 0,
    "few": 2,
    "several": 2,
}
_LAST_WORD = re.compile(r"([a-zäöüß]+)[^a-zäöüß]*$", re.I)

# The plurals lists hold most often (German); and singulars with a plural's ending.
_DE_PLURALS = frozenset(
    [
        "eier",
        "äpfel",
        "tomaten",
        "kartoffeln",
        "nudeln",
        "zwiebeln",
        "bananen",
        "möhren",
        "karotten",
        "erdbeeren",
        "himbeeren",
        "blaubeeren",
        "heidelbeeren",
        "trauben",
        "weintrauben",
        "kekse",
        "chips",
        "brötchen",
        "semmeln",
        "windeln",
        "batterien",
        "tabletten",
        "oliven",
        "gurken",
        "linsen",
        "bohnen",
        "erbsen",
        "nüsse",
        "haselnüsse",
        "walnüsse",
        "mandeln",
        "haferflocken",
        "cornflakes",
        "gewürze",
        "servietten",
        "taschentücher",
        "müllbeutel",
        "müllsäcke",
        "kirschen",
        "pflaumen",
        "birnen",
        "zitronen",
        "limetten",
        "orangen",
        "mandarinen",
        "clementinen",
        "pilze",
        "champignons",
        "würstchen",
        "garnelen",
        "spaghetti",
        "pommes",
        "kräuter",
        "blumen",
        "socken",
        "schrauben",
        "nägel",
        "dübel",
        "glühbirnen",
        "kerzen",
        "rosinen",
        "datteln",
        "feigen",
        "aprikosen",
        "pfirsiche",
        "nektarinen",
        "radieschen",
        "paprikas",
        "avocados",
        "kiwis",
        "frühlingszwiebeln",
        "knoblauchzehen",
        "eiswürfel",
        "tüten",
        "beutel",
        "filter",
        "kapseln",
        "pads",
        "tücher",
        "rechnungen",
        "briefe",
        "pakete",
        "geschenke",
        "karten",
        "unterlagen",
        "formulare",
        "termine",
        "hausaufgaben",
        "vokabeln",
        "bücher",
        "hefte",
        "stifte",
        "kabel",
        "schuhe",
        "hosen",
        "hemden",
        "handschuhe",
        "medikamente",
        "vitamine",
        "sachen",
        "dinge",
        "leute",
        "freunde",
        "kinder",
    ]
)
_DE_SINGULARS = frozenset(
    [
        "kuchen",
        "schinken",
        "braten",
        "rahmen",
        "käse",
        "reis",
        "essen",
        "joghurt",
        "senf",
        "zucker",
        "butter",
        "pfeffer",
        "wasser",
        "wagen",
        "garten",
        "boden",
        "ofen",
        "besen",
        "laden",
        "regen",
        "leben",
        "hähnchen",
        "mädchen",
    ]
)
_DE_ENDINGS = ("ungen", "heiten", "keiten", "schaften", "ionen", "innen", "eln", "ien")
_EN_SINGULARS = frozenset(
    [
        "hummus",
        "couscous",
        "asparagus",
        "molasses",
        "news",
        "gas",
        "bus",
        "glass",
        "grass",
        "dress",
        "lens",
        "series",
        "species",
        "octopus",
        "citrus",
        "cactus",
        "walrus",
        "swiss",
    ]
)
_EN_PLURALS = frozenset(["people", "children", "mice", "geese", "teeth", "feet", "men", "women"])


def plural(item: str, language: str) -> bool:
    """Whether the list item `item` is grammatically plural (see the module docstring)."""
    count = _count(item)
    if count is not None and count != 0:
        return count > 1
    last = _LAST_WORD.search(item)
    if last is None:
        return False
    word = last.group(1).casefold()
    if language_of(language) == "de":
        if word in _DE_SINGULARS:
            return False
        return word in _DE_PLURALS or word.endswith(_DE_ENDINGS)
    if word in _EN_SINGULARS:
        return False
    if word in _EN_PLURALS:
        return True
    return len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is"))


def _count(item: str) -> float | None:
    found = _NUMBER.match(item)
    if found is None:
        return None
    raw = found.group("n").casefold()
    if raw in _COUNTS:
        return _COUNTS[raw]
    try:
        return float(raw.replace(",", "."))
    except ValueError:
        return None


def several(items: list[str], language: str) -> bool:
    """Whether a sentence about `items` takes the plural: more than one, or one plural."""
    return len(items) > 1 or (len(items) == 1 and plural(items[0], language))


def join(items: list[str], conjunction: str) -> str:
    """`a`, `a und b`, `a, b und c`."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def sentence(text: str) -> str:
    """`text` as a sentence: its first letter a capital ("eggs are crossed off" → "Eggs are
    crossed off"), the rest as it is."""
    return text[:1].upper() + text[1:]


# A pronoun standing for what a command is about ("Streich die", "Verschieb ihn", "Cross it
# off", "delete that one"): what it means is the conversation's to say, never the word itself.
OBJECT_PRONOUNS = frozenset(
    [
        "die",
        "sie",
        "ihn",
        "es",
        "das",
        "den",
        "diese",
        "dieses",
        "diesen",
        "jene",
        "jenen",
        "it",
        "them",
        "that",
        "this",
        "those",
        "these",
    ]
)
PLURAL_PRONOUNS = frozenset(["die", "sie", "diese", "them", "those", "these"])
_POINTING = re.compile(r"\s+(?:one|ones|da|hier)$", re.I)  # "that one", "die da"


def is_pronoun(words: str) -> bool:
    """Whether `words` is a pronoun alone ("sie", "it", "that one"), as a command's object."""
    plain = _POINTING.sub("", " ".join(words.split()))
    return plain.casefold() in OBJECT_PRONOUNS
