"""Reading a stored record leniently, field by field.

Stored records are read leniently (STYLE: old and new versions must read each other):
msgspec ignores unknown fields and fills absent ones with their defaults. When its typed
decode still refuses a record because one value does not fit (damage, a hand edit, an older
writer's slip), `readable_fields` keeps what can be read: each field of the struct converts
on its own, one whose value does not fit is left out — its default applies — and handed to
`dropped` to be reported; `null` counts as absent. What a record needs to count at all (its
required fields) is the caller's `msgspec.convert` of the result.

Used for stored turns (`app.memory.turns`), event payloads (`app.runtime.wire`) and the
agent context a parked question keeps (`app.pipeline.agents.follow_up`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec


def readable_fields(
    record: Mapping[str, Any],
    kind: type[msgspec.Struct],
    *,
    dropped: Callable[[str, Any], None],
    strict: bool = True,
) -> dict[str, Any]:
    """The fields of `record` (by wire name) whose values convert to `kind`'s field types,
    converted; `dropped(wire_name, value)` for each one that does not."""
    clean: dict[str, Any] = {}
    for field in msgspec.structs.fields(kind):
        name = field.encode_name
        value = record.get(name)
        if value is None:  # absent or null: the default applies
            continue
        try:
            clean[name] = msgspec.convert(value, field.type, strict=strict)
        except msgspec.ValidationError:
            dropped(name, value)
    return clean
