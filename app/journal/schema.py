"""The stage-1 answer (design §8): the JSON schema the model server sees as `journal_reconstruct`,
and the structs the answer is read into.

Lenient on purpose where the rules are the validator's: `source` is any string and unknown
keys are ignored by the decoding, so that `assistant_source` and `legacy_field` are found
and recorded by `app.journal.validator` instead of vanishing in a decode error (which would
cost a repair call). Forbidding unknown keys here would also change the schema the model
gets (`additionalProperties: false`). An unknown key is found by `unknown_key`. Every list
defaults to empty (the neutral answer).

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
# schema's `title`), which design §8 fixes as `journal_reconstruct`: the struct is named so.
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


def _refusing_unknown(t: mi.Type) -> Any:
    """`t` as a type that refuses an unknown key in every struct (in a list or a field, as
    this schema nests them) and takes any value (the schema's own decoding checks the
    values): what `unknown_key` decodes with."""
    if isinstance(t, mi.ListType):
        return list[_refusing_unknown(t.item_type)]  # type: ignore[misc]  # a type made at run time
    if isinstance(t, mi.StructType):
        return msgspec.defstruct(
            f"{t.cls.__name__}_keys",
            [(f.encode_name, _refusing_unknown(f.type), None) for f in t.fields],
            forbid_unknown_fields=True,
        )
    return Any


_KEYS = msgspec.json.Decoder(_refusing_unknown(mi.type_info(Reconstruction)))


def unknown_key(text: str) -> str | None:
    """Where the answer `text`, one the schema's decoding read, holds a key the schema does
    not name, in msgspec's words (``Object contains unknown field `kind` - at
    `$.uncertainties[0]` ``), or None: the validator's `legacy_field`. The schema's decoding drops such keys (msgspec
    keeps no unknown fields), so the answer's JSON is read once more for its keys alone."""
    try:
        _KEYS.decode(strip_fence(text))
    except msgspec.ValidationError as exc:
        return str(exc)
    except msgspec.DecodeError:
        return None
    return None
