"""Street addresses with a house number, plus postcode and city when attached.

German: `Hauptstraße 12a`, `Weserstr. 112`, `Karl-Marx-Allee 3-5`, `Am Markt 5`,
`In der Aue 7, 50667 Köln`. English: `221B Baker Street`, `12 Oak Lane, London NW1 6XE`.
A postcode or a city alone is no address and stays; so is a street without a number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from app.llm.privacy.spans import Span

_UPPER = "A-ZÄÖÜ"
_LOWER = "a-zäöüß"
_STREET_SUFFIX = (r"(?:straße|strasse|str\.|weg|gasse|allee|platz|ring|damm|ufer|chaussee|"
                  r"steig|pfad|markt|berg|graben|wall|hof|park|stieg|zeile|kamp|twiete)")
_STREET_WORD = (r"(?:Straße|Strasse|Str\.|Weg|Gasse|Allee|Platz|Ring|Damm|Ufer|Chaussee|"
                r"Steig|Pfad|Markt|Berg|Graben|Wall)")
_HOUSE_NUMBER = r"(?!(?:19|20)\d\d\b)\d{1,4}(?:[ ]?[a-zA-Z](?![\w]))?(?:[ ]?[-/][ ]?\d{1,4}[a-zA-Z]?)?"
_DE_POSTCODE_CITY = rf"(?:,?[ ]+(?:D-)?\d{{5}}[ ]+[{_UPPER}][{_LOWER}]+(?:[ -][{_UPPER}][{_LOWER}]+)?)?"
_EN_STREET = (r"(?:Street|St\.?|Road|Rd\.?|Avenue|Ave\.?|Lane|Ln\.?|Drive|Boulevard|Blvd\.?|"
              r"Way|Court|Ct\.?|Place|Pl\.?|Square|Sq\.?|Terrace|Close|Crescent|Gardens|Row|"
              r"Mews|Hill|Grove)")
_EN_TAIL = (rf"(?:,[ ]+[{_UPPER}][a-z]+(?:[ ][{_UPPER}][a-z]+)?"
            r"(?:,?[ ]+(?:[A-Z]{1,2}\d[A-Z\d]?[ ]?\d[A-Z]{2}|[A-Z]{2}[ ]\d{5}|\d{5}))?)?")

_ADDRESS = re.compile(
    rf"(?:\b[{_UPPER}][\w{_LOWER}-]*(?i:{_STREET_SUFFIX})"
    rf"|\b[{_UPPER}][\w{_LOWER}-]+[ ]+{_STREET_WORD}"
    rf"|\b(?:Am|An[ ]der|An[ ]den|Auf[ ]dem|Auf[ ]der|Im|In[ ]der|In[ ]den|Zum|Zur|Unter[ ]den|Hinter[ ]der)"
    rf"(?:[ ]+[{_UPPER}][\w{_LOWER}-]+){{1,2}})"
    rf"[ ]+{_HOUSE_NUMBER}\b{_DE_POSTCODE_CITY}"
    rf"|\b\d{{1,5}}[A-Za-z]?[ ]+(?:[{_UPPER}][a-z]+[ ]+){{1,3}}{_EN_STREET}(?!\w){_EN_TAIL}")


def find(text: str) -> Iterator[Span]:
    for match in _ADDRESS.finditer(text):
        value = match.group(0).rstrip()
        yield Span(match.start(), match.start() + len(value), "ADDRESS", value)
