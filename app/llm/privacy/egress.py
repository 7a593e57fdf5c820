"""The second gate (issue 23): before a request leaves for a remote provider, its final body
— the bytes the provider is about to send: messages, a JSON schema, anything — must hold no
registered name, alias or name part in the normalised view (`normalise.py`), or the call
is refused (`privacy_blocked`) and nothing is sent.

It does not trust the masking: it decodes the body, reads every string value in it (not
the object keys, not a message's role or the model's name: the protocol's own words) and
looks for every spelling of every registered term (`NameIndex.spellings_of`) with a plain
substring search, wherever it stands — inside a word at a capital or an underscore
("CarlaMustermann"), in a hyphen compound, before a genitive; and in the view's
`names.skeleton`, where ASCII look-alikes are folded ("CarIa", "J0nas"). Only the decision whether a
name standing there is a person or its ordinary word ("am Freitag", "Earl Grey",
"Max-Planck-Institut") is the masking's own (`names.occurrence`): a body the masking would
leave so passes, anything else it missed is a detector gap.

A refused call logs one warning that names the gap — which kind of term (a whole name, an
alias, a name part), where in the body, in which form (lower case, another spelling,
invisible characters, look-alike letters, run together, in a compound, before a genitive)
— and never the name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import msgspec

from app.core import log as logctx
from app.llm.errors import ModelError
from app.llm.privacy.masking import OFF_LOOP_CHARS
from app.llm.privacy.names import NameIndex, occurrence
from app.llm.privacy.normalise import View, view
from app.llm.privacy.scan import lowered
from app.llm.privacy.stats import Counters

log = logging.getLogger(__name__)

_SEPARATOR = "\n"  # between the body's strings: a word bound for every rule


class EgressRefused(ModelError):
    """The egress gate refused a request: nothing was sent (never retried)."""

    def __init__(self, message: str) -> None:
        super().__init__("privacy_blocked", message)


class Gap(msgspec.Struct, frozen=True):
    """A registered name the masking missed, told without the name: which kind of term (a
    whole name, an alias, a name part), where in the body (its JSON path), in which forms."""

    term: str
    place: str
    form: list[str]


class EgressGate:
    """The gate of one call: the user's registered names (and those the detect role
    proposed), the counters to count a refusal in, the call's purpose for the log."""

    def __init__(
        self, index: NameIndex, counters: Counters | None = None, purpose: str = ""
    ) -> None:
        self.index = index
        self.counters = counters
        self.purpose = purpose
        self._spellings = sorted(
            {(spelling, term) for spelling, term in index.spellings_of()},
            key=lambda entry: -len(entry[0]),
        )

    async def __call__(self, body: bytes) -> None:
        """Check a body before it is sent; a long one off the event loop."""
        if len(body) > OFF_LOOP_CHARS:
            await asyncio.to_thread(self.check, body)
        else:
            self.check(body)

    def check(self, body: bytes) -> None:
        """Raise `EgressRefused` (and count and log the gap) when a registered name is in it."""
        gaps = self.gaps(body)
        if not gaps:
            return
        if self.counters is not None:
            self.counters.requests_blocked += 1
            self.counters.calls_blocked += 1
        log.warning(
            "privacy: the request body carried a registered name that the masking "
            "missed (a detector gap); the call is refused, nothing was sent",
            extra=logctx.fields(
                purpose=self.purpose, gaps=msgspec.to_builtins(gaps[:10]), gap_count=len(gaps)
            ),
        )
        first = gaps[0]
        raise EgressRefused(
            f"the request body carried a registered {first.term} "
            f"({', '.join(first.form)}) in {first.place} that the "
            f"masking missed; refused before sending, nothing was sent"
        )

    def gaps(self, body: bytes) -> list[Gap]:
        """Each registered name standing in the body as a person: what kind of term, where,
        in which form. Empty: the body may go."""
        if self.index.empty:
            return []
        places: list[tuple[int, str]] = []  # (where the string starts in `text`, its path)
        pieces: list[str] = []
        at = 0
        for path, value in _strings(msgspec.json.decode(body)):
            places.append((at, path))
            pieces.append(value)
            at += len(value) + len(_SEPARATOR)
        text = _SEPARATOR.join(pieces)
        shown = view(text)
        gaps = self._find(text, shown, shown.text, self.index, places)
        # ASCII look-alikes ("CarIa", "J0nas", "Herrnann"): the skeleton of the view.
        folded = self.index.in_skeleton(shown.text)
        if folded is not None:
            seen = _Through(shown, folded)
            found = self._find(text, seen, folded.text, self.index.skeletal, places)
            gaps.extend(
                msgspec.structs.replace(gap, form=[*gap.form, "ASCII look-alikes"]) for gap in found
            )
        return gaps

    def _find(
        self,
        text: str,
        shown: Any,
        seen: str,
        index: NameIndex,
        places: list[tuple[int, str]],
    ) -> list[Gap]:
        low = lowered(seen)
        names = index.first_words
        gaps: list[Gap] = []
        decided: set[int] = set()  # the longest spelling standing at a place decides it
        spellings = (
            self._spellings
            if index is self.index
            else sorted(set(index.spellings_of()), key=lambda entry: -len(entry[0]))
        )
        for spelling, term in spellings:
            start = low.find(spelling)
            while start != -1:
                end = start + len(spelling)
                found = occurrence(seen, low, start, end, names) if start not in decided else None
                if found is not None:
                    decided.add(start)
                    if found.span is not None:
                        gaps.append(
                            self._gap(text, shown, seen, start, end, spelling, term, found, places)
                        )
                start = low.find(spelling, start + 1)
        return gaps

    def _gap(
        self,
        text: str,
        shown: Any,
        seen: str,
        start: int,
        end: int,
        spelling: str,
        term: str,
        found: Any,
        places: list[tuple[int, str]],
    ) -> Gap:
        source_start, source_end = shown.start(start), shown.end(end)
        written = text[source_start:source_end]
        form = []
        if written != seen[start:end] and not view(written).plain:
            stripped = view(written).text
            form.append(
                "invisible characters" if len(stripped) < len(written) else "look-alike letters"
            )
        if spelling != term.lower():
            form.append("another spelling")
        elif seen[start:end] != term:
            form.append("another case")
        if found.joined:
            form.append("run together")
        if found.compound:
            form.append("in a compound")
        if seen[end : end + 1] in ("s", "'", "’"):
            form.append("before a genitive")
        place = next(path for offset, path in reversed(places) if offset <= source_start)
        return Gap(
            term=self.index.roles.get(term, "part"),
            place=place,
            form=form or ["as registered"],
        )


class _Through:
    """The body's offsets of a place in the skeleton of its view (two maps, one after the
    other)."""

    def __init__(self, shown: View, folded: View) -> None:
        self.shown, self.folded = shown, folded

    def start(self, i: int) -> int:
        return self.shown.start(self.folded.start(i))

    def end(self, i: int) -> int:
        return self.shown.end(self.folded.end(i))


_PROTOCOL = frozenset({"role", "model"})  # values that are the protocol's, not text


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string value of a decoded JSON body with its path."""
    if isinstance(value, str):
        yield path or "$", value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in _PROTOCOL or not isinstance(item, str):
                yield from _strings(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")
