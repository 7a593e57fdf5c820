"""All detectors in one table, and `detect()`: every identity of a text as settled spans.

Each kind has its own module; the table says which function finds it. The patterns are
compiled when the modules are imported, once per process; the registered names of a user
are one `NameIndex` (names by their first word), built only when the registry changes.

Every detector reads the normalised view of the text (`normalise.view`: no invisible
characters, no fullwidth or look-alike letters); the spans are mapped back to the text's
own characters, so a placeholder replaces exactly what stood there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from app.llm.privacy import address, birthdate, email, iban, names, phone, plate, taxid, url, words
from app.llm.privacy.names import NameIndex
from app.llm.privacy.normalise import confusable_letters, view
from app.llm.privacy.spans import Span, settle
from app.llm.privacy.words import public_name

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
    ("PERSON", names.find_labelled),
    ("PERSON", names.find_group_members),
    ("PERSON", names.find_double_names),
    ("PERSON", names.find_english),
)
EMPTY = NameIndex(())


def detect(text: str, registered: NameIndex = EMPTY, *, in_context: bool = True) -> list[Span]:
    """The identities in `text`, non-overlapping, in text order. `in_context=False`: of the
    people only the `registered` ones (the reply check: a name the call did not mask is no
    leak)."""
    shown = view(text)
    found: list[Span] = []
    for kind, finder in DETECTORS:
        if kind == "PERSON" and not in_context:
            continue
        if kind == "PERSON":  # "Dr. Oetker", "Uncle Ben's", "Onkel Dagobert" stay
            found.extend(s for s in finder(shown.text) if public_name(shown.text, s.start) is None)
        else:
            found.extend(finder(shown.text))
    if in_context:  # the unregistered names found so, where they stand again ("Rosen hat …")
        people = [s for s in found if s.kind == "PERSON"]
        if people:
            found.extend(names.find_again(shown.text, people))
    found.extend(registered.find_in_view(shown.text))
    spans = settle(found)
    if shown.plain:
        return spans
    back = []
    for span in spans:
        start, end = shown.start(span.start), shown.end(span.end)
        back.append(Span(start, end, span.kind, text[start:end]))
    return back


def warm_up() -> None:
    """Load what the detectors load lazily (the English word list, the confusables data),
    off the first call."""
    words.dictionary()
    confusable_letters()
