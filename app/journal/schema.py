"""The stage-1 answer (SPEC §8): the JSON schema the model server sees as `journal_reconstruct`.

Lenient on purpose where the rules are the validator's: `source` is any string and unknown
keys are accepted by the decoder, so that `assistant_source` and `legacy_field` are found and
recorded by `app.journal.validator` (on the raw JSON) instead of vanishing in a decode
error. Every list defaults to empty (the neutral answer).
"""

from __future__ import annotations

import msgspec

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
    source_id: str
    evidence: str


class Reconstruction(msgspec.Struct):
    source_order: list[str] = []
    chronology: list[ChronologyItem] = []
    contradictions: list[Sourced] = []
    uncertainties: list[Sourced] = []
    plan_changes: list[Sourced] = []
    corrections: list[Sourced] = []


# The name the model server sees (`app.llm.schema.schema_name` reads `__name__`).
Reconstruction.__name__ = PURPOSE_RECONSTRUCT

SOURCED_FIELDS = ("contradictions", "uncertainties", "plan_changes", "corrections")
TOP_FIELDS = frozenset(("source_order", "chronology", *SOURCED_FIELDS))
ITEM_FIELDS = frozenset(("source_id", "source", "time", "claims"))
CLAIM_FIELDS = frozenset(("kind", "evidence"))
SOURCED_ITEM_FIELDS = frozenset(("source_id", "evidence"))
