"""The privacy gateway (design §7a, seed 004 §2/§9/§16.1): what leaves the machine for a
remote provider carries no identity.

- `normalise`: the normalised view every check reads (NFKC, no default-ignorable code
  points, confusables folded) and the way back to the text's offsets.
- `detectors`: one module per kind (`email`, `url`, `iban` (schwifty), `taxid`
  (python-stdnum), `phone` (phonenumbers), `address`, `birthdate`, `plate`, `names`), all
  compiled once; `rules` holds their context rules as data tables; `scan` the one pass
  over a text they share (lower case, words, digit runs); `words` reads the words around a
  place; `homonyms` decides whether a registered name that is also a word is a person.
- `masking`: `Masker` (per call: placeholders, reply check, demasking), `StreamUnmasker`,
  `demask` (placeholders back from a kept mapping).
- `egress`: `EgressGate`, the second gate: a request body that still holds a registered
  name (in the normalised view) is refused before it is sent.
- `registry`: the user's people in SQLite (`IdentityRegistry`).
- `stats`: counters without content.
"""

from __future__ import annotations

from app.llm.privacy import address, birthdate, email, iban, names, phone, plate, taxid, url
from app.llm.privacy.detectors import detect, warm_up
from app.llm.privacy.egress import EgressGate, EgressRefused
from app.llm.privacy.masking import OFF_LOOP_CHARS, Masker, StreamUnmasker, demask
from app.llm.privacy.names import NameIndex
from app.llm.privacy.registry import LEGACY_FILE, IdentityRegistry, Person
from app.llm.privacy.spans import KINDS, Span
from app.llm.privacy.stats import PrivacyStats

__all__ = [
    "KINDS",
    "LEGACY_FILE",
    "OFF_LOOP_CHARS",
    "EgressGate",
    "EgressRefused",
    "IdentityRegistry",
    "Masker",
    "NameIndex",
    "Person",
    "PrivacyStats",
    "Span",
    "StreamUnmasker",
    "address",
    "birthdate",
    "demask",
    "detect",
    "email",
    "iban",
    "names",
    "phone",
    "plate",
    "taxid",
    "url",
    "warm_up",
]
