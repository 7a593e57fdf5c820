"""The stage-1 validator (SPEC §8): a pure function over (day sources, model answer) → codes.

Fail closed: anything the rules cannot confirm is a code. No repair happens here or anywhere:
a reconstruction with any code is not used (the artifact falls back to the sources in their
own order, `app.journal.artifact`).

Evidence matches after NFKC + whitespace normalisation *only* (`times.normalize`): no case
folding, no punctuation stripping. A reorder of the chronology against the source order is
justified only when every entry carries a time token confirmed in its own line and the
minutes never go backwards (equal times keep the source order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.journal import times
from app.journal.day import Source
from app.journal.schema import ChronologyItem, Reconstruction

# In the order SPEC §8 lists them; `validate` reports codes in this order.
CODES = (
    "coverage_incomplete", "order_changed", "unknown_source", "assistant_source",
    "evidence_not_verbatim", "time_not_pure", "time_source_mismatch", "reorder_unjustified",
    "legacy_field",
)


class _Findings:
    """The codes found so far, and each cited line normalized once per validation."""

    def __init__(self) -> None:
        self.codes: set[str] = set()
        self._lines: dict[str, str] = {}

    def line(self, source: Source) -> str:
        normalized = self._lines.get(source.source_id)
        if normalized is None:
            normalized = self._lines[source.source_id] = times.normalize(source.text)
        return normalized

    def add(self, code: str) -> None:
        self.codes.add(code)

    def ordered(self) -> list[str]:
        return [code for code in CODES if code in self.codes]


def validate(sources: Sequence[Source], answer: Reconstruction,
             unknown_key: str | None = None) -> list[str]:
    """The codes of every rule the model's stage-1 `answer` breaks; empty means valid.

    `answer` is the answer as the schema reads it; `unknown_key` says where the answer's
    JSON holds a key the schema does not name (`app.journal.schema.unknown_key`), which
    that reading dropped: `events`, a general `evidence` where it does not belong, or any
    other unknown key is `legacy_field`."""
    users = {s.source_id: s for s in sources if s.role == "user"}
    assistants = {s.source_id for s in sources if s.role == "assistant"}
    order = [s.source_id for s in sources if s.role == "user"]
    found = _Findings()
    if unknown_key is not None:
        found.add("legacy_field")

    for source_id in answer.source_order:
        _check_id(source_id, users, assistants, found)
    if answer.source_order != order:
        found.add("order_changed")

    placed: list[tuple[Source, str | None]] = []
    for item in answer.chronology:
        source = _check_item(item, users, assistants, found)
        if source is not None:
            placed.append((source, _confirmed_time(item.time, source, found)))

    if set(order) - set(answer.source_order) or set(order) - {s.source_id for s, _ in placed}:
        found.add("coverage_incomplete")
    _check_reorder(placed, order, found)

    for note in answer.sourced():
        source = _check_id(note.source_id, users, assistants, found)
        if source is not None:
            _check_evidence(note.evidence, source, found)
    return found.ordered()


def _check_id(source_id: str, users: Mapping[str, Source], assistants: set[str],
              found: _Findings) -> Source | None:
    """The user source an id names, or None (and the code: assistant or unknown)."""
    if source_id in users:
        return users[source_id]
    found.add("assistant_source" if source_id in assistants else "unknown_source")
    return None


def _check_item(item: ChronologyItem, users: Mapping[str, Source], assistants: set[str],
                found: _Findings) -> Source | None:
    source = _check_id(item.source_id, users, assistants, found)
    if item.source != "user":  # exactly `user`; nothing is rewritten
        found.add("assistant_source")
    if source is not None:
        for claim in item.claims:
            _check_evidence(claim.evidence, source, found)
    return source


def _check_evidence(evidence: str, source: Source, found: _Findings) -> None:
    quoted = times.normalize(evidence)
    if not quoted or quoted not in found.line(source):
        found.add("evidence_not_verbatim")


def _confirmed_time(token: str | None, source: Source, found: _Findings) -> str | None:
    """The item's time when it is a pure token that stands in its own line, else None."""
    if token is None:
        return None
    if not times.is_pure(token):
        found.add("time_not_pure")
        return None
    if not times.occurs_in(token, found.line(source)):
        found.add("time_source_mismatch")
        return None
    return token


def _check_reorder(placed: Sequence[tuple[Source, str | None]], order: Sequence[str],
                   found: _Findings) -> None:
    position = {source_id: index for index, source_id in enumerate(order)}
    indices = [position[source.source_id] for source, _ in placed]
    if _non_decreasing(indices):
        return
    minutes = [times.parse(token) if token is not None else None for _, token in placed]
    if any(m is None for m in minutes):
        found.add("reorder_unjustified")
        return
    keys = list(zip(minutes, indices))
    if not _non_decreasing(keys):
        found.add("reorder_unjustified")


def _non_decreasing(values: Iterable[Any]) -> bool:
    previous = None
    for value in values:
        if previous is not None and value < previous:
            return False
        previous = value
    return True
