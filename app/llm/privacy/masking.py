"""Masking one call: placeholders out, the reply checked, the originals back.

`Masker` is made per call and lives only as long as the call: it holds the mapping
(placeholder → original), which never leaves memory. The same value gets the same
placeholder throughout the call (`[PERSON_1]`, `[PHONE_1]` …); a placeholder replaces a
whole detected span, never a piece of a word.

The reply is checked *before* it is demasked: a plaintext identity that was masked in this
call, or a registered name in a person reading, is a leak (`privacy_blocked`). Homonyms in
their ordinary reading ("am Freitag" after "Herr Freitag" was masked) are no leak.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Mapping, Sequence

import phonenumbers

from app.llm.errors import ModelError
from app.llm.privacy import phone
from app.llm.privacy.detectors import EMPTY, detect
from app.llm.privacy.names import NameIndex
from app.llm.privacy.normalise import normalise
from app.llm.privacy.spans import KINDS, Span
from app.llm.types import Message

# Texts (a prompt's characters, a request body's bytes) longer than this are masked and
# checked in a worker thread: about 4 ms of detectors, the most the event loop may spend.
OFF_LOOP_CHARS = 8_000
PLACEHOLDER = re.compile(r"\[?\b(" + "|".join(KINDS) + r")_(\d+)\b\]?")
_LONGEST_PLACEHOLDER = len("[BIRTHDATE_9999]")
_CHECK_CONTEXT = 80  # characters before new stream text that decide a name's reading
_NOT_DIGIT = re.compile(r"\D")
_SPACE = re.compile(r"\s+")
_NUMBER_KINDS = ("PHONE", "IBAN", "TAXID")


@functools.lru_cache(maxsize=4096)
def value_key(kind: str, value: str) -> str:
    """What makes two spellings the same value: the number for phones (`+49 171 …` is
    `0171 …`), digits for other numbers, case-folded text else — all in the normalised view
    ("Car\u00adla" is "Carla", fullwidth digits are digits)."""
    value = normalise(value)
    if kind == "PHONE":
        try:
            number = phonenumbers.parse(value, phone.REGION)
            e164 = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
            return "PHONE:" + e164
        except phonenumbers.NumberParseException:
            pass
    if kind in _NUMBER_KINDS:
        return (
            kind + ":" + (value[:2].upper() if kind == "IBAN" else "") + _NOT_DIGIT.sub("", value)
        )
    return kind + ":" + _SPACE.sub(" ", value.casefold())


def demask(text: str, mapping: Mapping[str, str], *, json_string: bool = False) -> str:
    """`text` with every placeholder of `mapping` (`[PERSON_1]` → its original) put back; a
    placeholder the mapping does not know stays as it is. `json_string`: the text is JSON,
    escape what goes in. (A copy package's mapping is kept locally until its result is
    pasted back: `app.profiles.writing`.)"""

    def original(match: re.Match[str]) -> str:
        value = mapping.get(f"[{match.group(1)}_{match.group(2)}]")
        if value is None:
            return match.group(0)
        return json.dumps(value, ensure_ascii=False)[1:-1] if json_string else value

    return PLACEHOLDER.sub(original, text) if mapping else text


def _reason(span: Span, registered: Sequence[tuple[int, int]]) -> str:
    if span.kind != "PERSON":
        return span.kind
    if any(start < span.end and span.start < end for start, end in registered):
        return "registered"
    return "looks_like_name"


class Masker:
    """Masks one call's prompt and checks/demasks its reply."""

    def __init__(self, registered: NameIndex = EMPTY) -> None:
        self.registered = registered
        self._by_key: dict[str, str] = {}  # value_key -> placeholder
        self.mapping: dict[str, str] = {}  # placeholder -> original as first seen
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)  # distinct values per kind
        self._leak_index: NameIndex | None = None

    @property
    def masked_count(self) -> int:
        return len(self.mapping)

    def mask_messages(self, messages: Sequence[Message]) -> list[Message]:
        return [{"role": m["role"], "content": self.mask(m["content"])} for m in messages]

    async def mask_messages_off_loop(self, messages: Sequence[Message]) -> list[Message]:
        """`mask_messages`, in a worker thread when the prompt is longer than
        `OFF_LOOP_CHARS` (a journal day of 200 kB would hold the event loop for 100 ms)."""
        if sum(len(m["content"]) for m in messages) > OFF_LOOP_CHARS:
            return await asyncio.to_thread(self.mask_messages, messages)
        return self.mask_messages(messages)

    def mask(self, text: str) -> str:
        pieces: list[str] = []
        last = 0
        for span in detect(text, self.registered):
            pieces.append(text[last : span.start])
            pieces.append(self._placeholder(span.kind, span.value))
            last = span.end
        if not pieces:
            return text
        pieces.append(text[last:])
        self._leak_index = None
        return "".join(pieces)

    def spans(self, text: str) -> list[dict[str, object]]:
        """The preview: where each identity is, the characters it replaces, the placeholder
        it gets and why (`reason`): "registered" (a person of the registry, in any
        spelling), "looks_like_name" (a name read in its context), else its kind."""
        registered = [(s.start, s.end) for s in self.registered.find(text)]
        return [
            {
                "start": s.start,
                "end": s.end,
                "kind": s.kind,
                "text": s.value,
                "placeholder": self._placeholder(s.kind, s.value),
                "reason": _reason(s, registered),
            }
            for s in detect(text, self.registered)
        ]

    def _placeholder(self, kind: str, value: str) -> str:
        key = value_key(kind, value)
        placeholder = self._by_key.get(key)
        if placeholder is None:
            self.counts[kind] += 1
            placeholder = f"[{kind}_{self.counts[kind]}]"
            self._by_key[key] = placeholder
            self.mapping[placeholder] = value
        return placeholder

    def leaks(self, raw: str) -> list[str]:
        """Kinds of plaintext identities in a raw reply (empty: clean), read in the same
        normalised view as the prompt was: a registered name or one masked in this call
        (a name inside an e-mail address is the address's part), or any other value masked
        in this call."""
        found: list[str] = []
        masked_keys = self._by_key.keys()
        for span in detect(raw, self._leak_names(), in_context=False):
            if span.kind not in found and (
                span.kind == "PERSON" or value_key(span.kind, span.value) in masked_keys
            ):
                found.append(span.kind)
        folded = normalise(raw).casefold()
        for placeholder, value in self.mapping.items():
            kind = placeholder[1 : placeholder.rindex("_")]
            if kind not in found and kind != "PERSON" and normalise(value).casefold() in folded:
                found.append(kind)
        return found

    def _leak_names(self) -> NameIndex:
        # Registered names plus the unregistered names masked in this call.
        if self._leak_index is None:
            masked_people = [v for p, v in self.mapping.items() if p.startswith("[PERSON_")]
            self._leak_index = NameIndex([*self.registered.terms, *masked_people])
        return self._leak_index

    def check(self, raw: str) -> None:
        """Raise `privacy_blocked` when the raw reply carries a plaintext identity."""
        kinds = self.leaks(raw)
        if kinds:
            raise ModelError(
                "privacy_blocked",
                f"the reply carried plaintext identities ({', '.join(kinds)}); "
                f"blocked, nothing of it is used",
            )

    def unmask(self, text: str, *, json_string: bool = False) -> str:
        """Put the originals back. `json_string`: the text is JSON, escape what goes in."""
        return demask(text, self.mapping, json_string=json_string)

    @property
    def hold_back(self) -> int:
        """Characters a stream keeps back: the longest thing that could still be forming —
        a registered name twice over, for the invisible characters a reply may hide
        between its letters ("Car\u00adla")."""
        longest = max((len(v) for v in self.mapping.values()), default=0)
        longest = max(longest, 2 * max((len(t) for t in self.registered.terms), default=0) + 1)
        return max(longest, _LONGEST_PLACEHOLDER)


class StreamUnmasker:
    """Checks and demasks a streamed reply piece by piece, holding back the few characters
    that could still become an identity or a placeholder."""

    def __init__(self, masker: Masker) -> None:
        self.masker = masker
        self._raw = ""
        self._emitted = 0  # raw characters already released
        self._checked = 0  # raw characters already checked for leaks

    @property
    def released(self) -> bool:
        return self._emitted > 0

    def feed(self, delta: str) -> str:
        self._raw += delta
        self._check()
        cut = max(self._emitted, len(self._raw) - self.masker.hold_back)
        cut = self._not_inside_placeholder(cut)
        return self._release(cut)

    def finish(self) -> str:
        self._check()
        return self._release(len(self._raw))

    def _check(self) -> None:
        # Only the new text and enough before it for any value and its context: a long
        # stream is not checked again from the start on every piece.
        start = max(0, self._checked - self.masker.hold_back - _CHECK_CONTEXT)
        while start > 0 and not self._raw[start - 1].isspace():
            start -= 1  # never from the middle of a word ("Johanna" is no "anna")
        self.masker.check(self._raw[start:])
        self._checked = len(self._raw)

    def _not_inside_placeholder(self, cut: int) -> int:
        for match in PLACEHOLDER.finditer(self._raw, max(0, cut - _LONGEST_PLACEHOLDER)):
            if match.start() < cut < match.end():
                return max(self._emitted, match.start())
        return cut

    def _release(self, cut: int) -> str:
        if cut <= self._emitted:
            return ""
        piece = self.masker.unmask(self._raw[self._emitted : cut])
        self._emitted = cut
        return piece
