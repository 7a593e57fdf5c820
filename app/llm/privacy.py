"""The privacy gateway (SPEC §7, seed 004 §2/§9): what leaves the machine carries no identity.

For a provider marked remote, every message of the prompt (system, history, user) goes out
masked: names from the user's identity list, e-mail addresses, phone numbers, street
addresses and IBANs become placeholders such as `[PERSON_1]`, `[EMAIL_1]`. The same value
gets the same placeholder throughout one call, so the model can still refer to it.

The reply is checked before it is demasked: if it carries an identity in plain text (a
name of the identity list, or any value that was masked in this call), it is blocked with
`privacy_blocked` — fail closed, nothing of it is used. Otherwise the placeholders are put
back. Streamed replies are checked the same way, holding back the few characters that could
still become an identity or a placeholder.

The identity list: the setting `privacy_identities` (comma-separated) plus the file
`identities.txt` in the data dir (one name per line, `#` starts a comment), re-read when it
changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from app.llm.errors import ModelError
from app.llm.types import Message

IDENTITY_FILE = "identities.txt"
KINDS = ("EMAIL", "IBAN", "PHONE", "ADDRESS", "PERSON")

_STREET_WORDS = (r"(?:straße|strasse|str\.|weg|gasse|allee|platz|ring|damm|ufer|chaussee|"
                 r"steig|pfad|markt)")
_HOUSE_NUMBER = r"\d{1,4}\s?[a-zA-Z]?(?:\s?[-/]\s?\d{1,4}[a-zA-Z]?)?"
_POSTCODE_CITY = r"(?:,?\s+\d{5}\s+[A-ZÄÖÜ][a-zäöüß]+(?:[ -][A-ZÄÖÜ][a-zäöüß]+)?)?"
_EN_STREET = (r"(?:Street|St\.|Road|Rd\.|Avenue|Ave\.|Lane|Ln\.|Drive|Dr\.|Boulevard|"
              r"Blvd\.|Way|Court|Ct\.|Place|Pl\.|Square|Terrace|Close)")

# Order matters: an e-mail may contain a name, an IBAN contains digit runs.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("EMAIL", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")),
    ("IBAN", re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,3})?\b")),
    ("PHONE", re.compile(
        r"(?<![\w+])(?:(?:\+|00)\d{1,3}[\s./-]?(?:\(0\)[\s./-]?)?\d{1,5}"
        r"|\(0\d{1,5}\)|0\d{2,5})(?:[ ./-]{0,3}\d){4,12}(?!\w)")),
    ("ADDRESS", re.compile(
        r"(?:\b[A-ZÄÖÜ][\wäöüß-]*" + _STREET_WORDS +
        r"|\b[A-ZÄÖÜ][\wäöüß-]+\s+(?:Straße|Strasse|Str\.|Weg|Gasse|Allee|Platz|Ring|Damm)"
        r"|\b(?:Am|An der|Auf dem|Im|In der|Zum|Zur)\s+[A-ZÄÖÜ][\wäöüß-]+)"
        r"\s+" + _HOUSE_NUMBER + r"\b" + _POSTCODE_CITY
        + r"|\b\d{1,5}[A-Za-z]?\s+(?:[A-Z][a-z]+\s+){1,3}" + _EN_STREET + r"(?!\w)")),
)

_PLACEHOLDER = re.compile(r"\[?\b(" + "|".join(KINDS) + r")_(\d+)\b\]?")
_LONGEST_PLACEHOLDER = len("[ADDRESS_9999]")


class IdentityList:
    """Names to mask, from the setting and from `identities.txt` (re-read on change)."""

    def __init__(self, data_dir: Path | None, configured: str | None) -> None:
        self.path = data_dir / IDENTITY_FILE if data_dir else None
        self._configured = _split_names((configured or "").split(","))
        self._file_names: tuple[str, ...] = ()
        self._file_stamp: tuple[float, int] | None = None

    def names(self) -> tuple[str, ...]:
        return self._configured + self._read_file()

    def _read_file(self) -> tuple[str, ...]:
        if self.path is None:
            return ()
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._file_names, self._file_stamp = (), None
            return ()
        stamp = (st.st_mtime, st.st_size)
        if stamp != self._file_stamp:
            lines = self.path.read_text(encoding="utf-8").splitlines()
            self._file_names = _split_names(line.split("#", 1)[0] for line in lines)
            self._file_stamp = stamp
        return self._file_names


def _split_names(raw: Iterable[str]) -> tuple[str, ...]:
    names = {part.strip() for part in raw if len(part.strip()) >= 2}
    return tuple(sorted(names, key=lambda n: (-len(n), n)))  # longest first


def _name_pattern(names: Sequence[str]) -> re.Pattern[str] | None:
    if not names:
        return None
    # A name also matches before a genitive s ("Annas"); the s stays outside the mask.
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(r"(?<!\w)(?:" + alternatives + r")(?=s?(?!\w))", re.IGNORECASE)


class Masker:
    """Masks one call's prompt and checks/demasks its reply."""

    def __init__(self, names: Sequence[str]) -> None:
        self._names = _name_pattern(names)
        self._by_value: dict[str, str] = {}  # original (case-folded for names) -> placeholder
        self.mapping: dict[str, str] = {}  # placeholder -> original as first seen
        self._counts = dict.fromkeys(KINDS, 0)
        self._identity_names = tuple(names)

    @property
    def masked_count(self) -> int:
        return len(self.mapping)

    def mask_messages(self, messages: Sequence[Message]) -> list[Message]:
        return [{"role": m["role"], "content": self.mask(m["content"])} for m in messages]

    def mask(self, text: str) -> str:
        for kind, pattern in PATTERNS:
            text = pattern.sub(lambda match, kind=kind: self._placeholder(kind, match.group(0)),
                               text)
        if self._names is not None:
            text = self._names.sub(lambda match: self._placeholder("PERSON", match.group(0)), text)
        return text

    def _placeholder(self, kind: str, value: str) -> str:
        key = value.casefold() if kind == "PERSON" else value
        placeholder = self._by_value.get(key)
        if placeholder is None:
            self._counts[kind] += 1
            placeholder = f"[{kind}_{self._counts[kind]}]"
            self._by_value[key] = placeholder
            self.mapping[placeholder] = value
        return placeholder

    def leaks(self, raw: str) -> list[str]:
        """Kinds of plaintext identities in a raw reply (empty: clean)."""
        found = []
        if self._names is not None and self._names.search(raw):
            found.append("PERSON")
        lowered = raw.casefold()
        for placeholder, value in self.mapping.items():
            kind = placeholder[1:placeholder.index("_")]
            if kind != "PERSON" and value.casefold() in lowered and kind not in found:
                found.append(kind)
        return found

    def check(self, raw: str) -> None:
        """Raise `privacy_blocked` when the raw reply carries a plaintext identity."""
        kinds = self.leaks(raw)
        if kinds:
            raise ModelError("privacy_blocked",
                             f"the reply carried plaintext identities ({', '.join(kinds)}); "
                             f"blocked, nothing of it is used")

    def unmask(self, text: str, *, json_string: bool = False) -> str:
        """Put the originals back. `json_string`: the text is JSON, escape what goes in."""

        def original(match: re.Match[str]) -> str:
            value = self.mapping.get(f"[{match.group(1)}_{match.group(2)}]")
            if value is None:
                return match.group(0)
            return json.dumps(value, ensure_ascii=False)[1:-1] if json_string else value

        return _PLACEHOLDER.sub(original, text) if self.mapping else text

    @property
    def hold_back(self) -> int:
        """Characters a stream keeps back: the longest thing that could still be forming."""
        longest = max((len(v) for v in self.mapping.values()), default=0)
        longest = max(longest, max((len(n) for n in self._identity_names), default=0) + 1)
        return max(longest, _LONGEST_PLACEHOLDER)


class StreamUnmasker:
    """Checks and demasks a streamed reply piece by piece (see module docstring)."""

    def __init__(self, masker: Masker) -> None:
        self.masker = masker
        self._raw = ""
        self._emitted = 0  # raw characters already released

    def feed(self, delta: str) -> str:
        self._raw += delta
        self.masker.check(self._raw)
        cut = max(self._emitted, len(self._raw) - self.masker.hold_back)
        cut = self._not_inside_placeholder(cut)
        return self._release(cut)

    def finish(self) -> str:
        self.masker.check(self._raw)
        return self._release(len(self._raw))

    def _not_inside_placeholder(self, cut: int) -> int:
        for match in _PLACEHOLDER.finditer(self._raw, max(0, cut - _LONGEST_PLACEHOLDER)):
            if match.start() < cut < match.end():
                return max(self._emitted, match.start())
        return cut

    def _release(self, cut: int) -> str:
        if cut <= self._emitted:
            return ""
        piece = self.masker.unmask(self._raw[self._emitted:cut])
        self._emitted = cut
        return piece
