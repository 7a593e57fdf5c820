"""Every purpose the product asks a model for, in two visible lists (part of the wiring:
`app.wiring.server.create_app` calls `register_offline_answers`).

- `OFFLINE_ANSWERS`: what the offline model answers per purpose, beyond the base table in
  `app.llm.offline.handlers`. Registered in this order; a later table replaces an earlier
  one's purpose (the memory rules extend the pipeline's `salience` and `responder`).
- `model_schemas()`: the structs the product sends to a model, by purpose — the pipeline's
  purpose table, the journal's reconstruction, the writing profile's review. Nothing at run
  time needs the list; the tests hold every schema against the offline provider and the
  real llama.cpp peer.

No module registers anything when it is imported: a purpose counts once it is listed here.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from app.journal import offline as journal_offline
from app.journal.profile import review
from app.journal.profile.package import PURPOSE_REVIEW, ReviewAnswer
from app.journal.schema import PURPOSE_RECONSTRUCT, Reconstruction
from app.llm.offline import handlers
from app.pipeline import offline as pipeline_offline
from app.pipeline.prompts import PURPOSES
from app.pixie import offline as pixie_offline

OFFLINE_ANSWERS: tuple[Mapping[str, handlers.Handler], ...] = (
    pipeline_offline.PURPOSE_HANDLERS,
    pixie_offline.PURPOSE_HANDLERS,  # after the pipeline's, whose salience and responder it extends
    journal_offline.PURPOSE_HANDLERS,
    review.PURPOSE_HANDLERS,
)


def register_offline_answers() -> None:
    """Teach the offline model every purpose of `OFFLINE_ANSWERS` (idempotent)."""
    for table in OFFLINE_ANSWERS:
        for purpose, handler in table.items():
            handlers.register(purpose, handler)


def model_schemas() -> dict[str, type[msgspec.Struct]]:
    """Purpose -> the struct its answer must match; a purpose with two structs is a bug."""
    found: dict[str, type[msgspec.Struct]] = {}
    tables: tuple[Mapping[str, type[msgspec.Struct] | None], ...] = (
        {name: purpose.schema for name, purpose in PURPOSES.items()},
        {PURPOSE_RECONSTRUCT: Reconstruction},
        {PURPOSE_REVIEW: ReviewAnswer},
    )
    for table in tables:
        for purpose, schema in table.items():
            if schema is None:
                continue
            if found.setdefault(purpose, schema) is not schema:
                raise ValueError(f"purpose {purpose!r} has two schemas: "
                                 f"{found[purpose].__qualname__} and {schema.__qualname__}")
    return found
