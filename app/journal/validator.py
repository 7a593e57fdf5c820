"""The stage-1 validator (design §8): a pure function over (day sources, model answer) → codes.

Fail closed: anything the rules cannot confirm is a code. No repair happens here or anywhere:
a reconstruction with any code is not used (the artifact falls back to the sources in their
own order, `app.journal.artifact`).

Evidence matches after NFKC + whitespace normalisation *only* (`times.normalize`): no case
folding, no punctuation stripping.

A reorder is justified only by the times *used for it* (seed 004 §16.1, `reorder_unjustified`):
every pair of chronology entries whose order differs from the source order must both carry a
time confirmed in its own line, and their minutes must not fall; an untimed entry keeps its
place relative to every other entry; equal or relative times keep source order. Pairs the
chronology keeps in source order are not compared: their times were not used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.journal import times
from app.journal.day import Source
from app.journal.schema import ChronologyItem, Reconstruction

# In the order design §8 lists them; `validate` reports codes in this order.
CODES = (
    "coverage_incomplete",
    "order_changed",
    "unknown_source",
    "assistant_source",
    "evidence_not_verbatim",
    "time_not_pure",
    "time_source_mismatch",
    "reorder_unjustified",
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


def validate(
    sources: Sequence[Source], answer: Reconstruction, unknown_key: str | None = None
) -> list[str]:
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


def _check_id(
    source_id: str, users: Mapping[str, Source], assistants: set[str], found: _Findings
) -> Source | None:
    """The user source an id names, or None (and the code: assistant or unknown)."""
    if source_id in users:
        return users[source_id]
    found.add("assistant_source" if source_id in assistants else "unknown_source")
    return None


def _check_item(
    item: ChronologyItem, users: Mapping[str, Source], assistants: set[str], found: _Findings
) -> Source | None:
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


def _check_reorder(
    placed: Sequence[tuple[Source, str | None]], order: Sequence[str], found: _Findings
) -> None:
    """`reorder_unjustified` unless every pair the chronology `placed` puts out of source
    order is justified by its two confirmed times (module docstring).

    Not by comparing every pair: one pass over the chronology. An untimed entry has no pair
    out of order when every entry before it stands before it in the source too and every
    entry after it after it (prefix maximum, suffix minimum of the source positions). A timed
    entry's pairs are justified when every timed entry placed before it from a later source
    position has fewer minutes (the maximum over those positions, kept in a Fenwick tree)."""
    position = {source_id: index for index, source_id in enumerate(order)}
    indices = [position[source.source_id] for source, _ in placed]
    if _non_decreasing(indices):
        return
    minutes = [times.parse(token) if token is not None else None for _, token in placed]
    if not (_untimed_stay(indices, minutes) and _timed_ascend(indices, minutes, len(order))):
        found.add("reorder_unjustified")


def _untimed_stay(indices: Sequence[int], minutes: Sequence[int | None]) -> bool:
    """No untimed entry has an entry placed on its other side than in the source."""
    after = [0] * len(indices)  # the smallest source position placed after each entry
    smallest = len(indices) and max(indices) + 1
    for k in range(len(indices) - 1, -1, -1):
        after[k] = smallest
        smallest = min(smallest, indices[k])
    largest = -1  # the largest source position placed before the entry
    for k, index in enumerate(indices):
        if minutes[k] is None and (largest > index or after[k] < index):
            return False
        largest = max(largest, index)
    return True


def _timed_ascend(indices: Sequence[int], minutes: Sequence[int | None], size: int) -> bool:
    """Every timed entry has more minutes than each timed entry placed before it from a
    later source position (an untimed one there is `_untimed_stay`'s)."""
    tree = [-1] * (size + 1)  # Fenwick tree over reversed positions: max minutes so far
    for index, value in zip(indices, minutes, strict=True):
        if value is None:
            continue
        reversed_position = size - index  # positions after `index` come first
        best, k = -1, reversed_position - 1
        while k > 0:
            best = max(best, tree[k])
            k -= k & -k
        if best >= value:
            return False
        k = reversed_position
        while k <= size:
            tree[k] = max(tree[k], value)
            k += k & -k
    return True


def _non_decreasing(values: Iterable[Any]) -> bool:
    previous = None
    for value in values:
        if previous is not None and value < previous:
            return False
        previous = value
    return True
