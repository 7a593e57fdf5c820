"""The stage-1 answer (SPEC §8): the JSON schema the model server sees as `journal_reconstruct`,
and the structs the answer is read into.

Lenient on purpose where the rules are the validator's: `source` is any string and unknown
keys are ignored by the decoding, so that `assistant_source` and `legacy_field` are found
and recorded by `app.journal.validator` instead of vanishing in a decode error (which would
cost a repair call). Forbidding unknown keys here would also change the schema the model
gets (`additionalProperties: false`). The keys the decoding ignores are read off the
answer's JSON by `unknown_keys`. Every list defaults to empty (the neutral answer).

No struct here has a docstring: msgspec would send it to the model as the schema's
`description`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
from msgspec import inspect as mi

from app.llm.schema import strip_fence

PURPOSE_RECONSTRUCT = "journal_reconstruct"
PURPOSE_NARRATE = "journal_generate"


class Claim(msgspec.Struct):
    kind: str
    evidence: str


class ChronologyItem(msgspec.Struct):
    source_id: str
    source: str
    time: str | None = None
    claims: list[Claim] = []


class Sourced(msgspec.Struct):
    # A sourced note (contradiction, uncertainty, plan change, correction); the verified
    # artifact passes the checked ones on as they are.
    source_id: str
    evidence: str


# The model server knows the schema by the struct's name (`json_schema.name`, and the
# schema's `title`), which SPEC §8 fixes as `journal_reconstruct`: the struct is named so.
class journal_reconstruct(msgspec.Struct):  # noqa: N801 - the schema's name on the wire
    source_order: list[str] = []
    chronology: list[ChronologyItem] = []
    contradictions: list[Sourced] = []
    uncertainties: list[Sourced] = []
    plan_changes: list[Sourced] = []
    corrections: list[Sourced] = []

    def sourced(self) -> Iterator[Sourced]:
        """Every sourced note, of the four kinds."""
        yield from self.contradictions
        yield from self.uncertainties
        yield from self.plan_changes
        yield from self.corrections


Reconstruction = journal_reconstruct  # the name the code reads it by


def _shape(t: mi.Type) -> dict[str, Any] | None:
    """An object type's wire keys, each with the shape of its value (lists looked through);
    None for a value that holds no object."""
    if isinstance(t, mi.ListType):
        return _shape(t.item_type)
    if isinstance(t, mi.StructType):
        return {f.encode_name: _shape(f.type) for f in t.fields}
    return None


_SHAPE = _shape(mi.type_info(Reconstruction))


def unknown_keys(text: str) -> list[str]:
    """Where the answer `text` holds a key the schema does not name, as JSON paths
    (`$.events`, `$.chronology[0].evidence`), in the answer's order: the validator's
    `legacy_field`. The struct decoding drops such keys (msgspec keeps no unknown fields), so
    they are read off the answer's JSON; an answer that is no JSON has none."""
    try:
        data = msgspec.json.decode(strip_fence(text))
    except msgspec.DecodeError:
        return []
    found: list[str] = []
    _unknown(data, _SHAPE, "$", found)
    return found


def _unknown(value: Any, shape: dict[str, Any] | None, path: str, found: list[str]) -> None:
    if shape is None:
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _unknown(item, shape, f"{path}[{index}]", found)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in shape:
                _unknown(item, shape[key], f"{path}.{key}", found)
            else:
                found.append(f"{path}.{key}")
