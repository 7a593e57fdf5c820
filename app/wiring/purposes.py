"""Every purpose the product asks a model for, in two visible lists (part of the wiring).

- `OFFLINE_ANSWERS`: what the offline model answers per purpose, one immutable mapping
  composed here from the provider's own answers and the rooms' tables. Where a room's
  handler takes the place of an earlier one (the pipeline's `responder` wraps the
  provider's reflective reply; the memory rules wrap the pipeline's `salience` and
  `responder`), the step says so (`replacing`); any other purpose listed twice is an error
  at import; the journal's draft leaves out a line of nothing but commands by the pipeline's
  command rules, handed in here. `app.wiring.server.create_app` hands it to the model
  gateway it builds.
- `model_schemas()`: the structs the product sends to a model, by purpose — the pipeline's
  purpose table, the journal's reconstruction, the writing profile's review. Nothing at run
  time needs the list; the tests hold every schema against the offline provider and the
  real llama.cpp peer.
- `TASK_PURPOSES`: what a task model answers when one is chosen (`llm_task_model`, issue 36
  item 4): every structured purpose of `model_schemas()` — perception, the saliences, the
  router, the planner and agents, the tribunal's verdict, the consolidation, the journal's
  reconstruction, the profile's review. What a person reads stays on the main model: the
  reply's stream, the corrector, the journal's narration, the session summary (free text).
  `app.wiring.server` hands it to the gateway, whose `provider_for` picks by it.

Nothing is registered anywhere: a purpose counts once it is listed here, and what a gateway
answers offline is the value it was built with.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from app.consolidation import offline as pixie_offline
from app.journal import offline as journal_offline
from app.journal.schema import PURPOSE_RECONSTRUCT, Reconstruction
from app.llm.offline import handlers
from app.pipeline import offline as pipeline_offline
from app.pipeline.offline_rules import routing
from app.pipeline.prompts import PURPOSES
from app.profiles.writing import review
from app.profiles.writing.package import PURPOSE_REVIEW, ReviewAnswer

_PIPELINE = handlers.extended(
    handlers.BASE_ANSWERS, pipeline_offline.PURPOSE_HANDLERS, replacing={"responder"}
)
_MEMORY = handlers.extended(
    _PIPELINE, pixie_offline.PURPOSE_HANDLERS, replacing={"salience", "responder"}
)
OFFLINE_ANSWERS: handlers.Answers = handlers.extended(
    handlers.extended(_MEMORY, journal_offline.purpose_handlers(routing.journal_commands)),
    review.PURPOSE_HANDLERS,
)


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
                raise ValueError(
                    f"purpose {purpose!r} has two schemas: "
                    f"{found[purpose].__qualname__} and {schema.__qualname__}"
                )
    return found


# A structured answer is what a smaller model does well enough; free text is what a person reads.
TASK_PURPOSES: frozenset[str] = frozenset(model_schemas())
