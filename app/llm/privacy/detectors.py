"""All detectors in one table, and `detect()`: every identity of a text as settled spans.

Each kind has its own module; the table says which function finds it. The patterns are
compiled when the modules are imported, once per process; the registered names of a user
are one `NameIndex` (names by their first word), built only when the registry changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from app.llm.privacy import address, birthdate, email, iban, names, phone, plate, taxid, url, words
from app.llm.privacy.names import NameIndex
from app.llm.privacy.spans import Span, settle

Finder = Callable[[str], Iterator[Span]]

DETECTORS: tuple[tuple[str, Finder], ...] = (
    ("EMAIL", email.find),
    ("URL", url.find),
    ("IBAN", iban.find),
    ("TAXID", taxid.find),
    ("PHONE", phone.find),
    ("ADDRESS", address.find),
    ("BIRTHDATE", birthdate.find),
    ("PLATE", plate.find),
    ("PERSON", names.find_in_context),
    ("PERSON", names.find_english),
)
EMPTY = NameIndex(())


def detect(text: str, registered: NameIndex = EMPTY) -> list[Span]:
    """The identities in `text`, non-overlapping, in text order."""
    found: list[Span] = []
    for _kind, finder in DETECTORS:
        found.extend(finder(text))
    found.extend(registered.find(text))
    return settle(found)


def warm_up() -> None:
    """Load what the detectors load lazily (the English word list), off the first call."""
    words.dictionary()
