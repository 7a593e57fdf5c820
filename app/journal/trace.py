"""A draft's trace (design §8, seed 004 §16.5): what the job used and how each stage went — no
prompt, no reply, no name.

Stored in `journal_drafts.trace_json` as the first version wrote it (the stdlib's JSON:
`", "` and `": "` separators, non-ASCII escaped) and answered as stored by
`GET /api/journal/drafts/{id}`: a row written by any version reads as it was written.
"""

from __future__ import annotations

import json

import msgspec


class StageRecord(msgspec.Struct):
    """One stage: `outcome` (reconstruct: valid | fallback | offline; narrate: model |
    offline | local_draft — `offline`: the offline stand-in answered, code `no_model`), the
    codes it recorded, its time and the tokens the provider counted."""

    stage: str
    outcome: str = "running"
    codes: list[str] = []
    ms: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class DraftTrace(msgspec.Struct, kw_only=True):
    """The job's provider and model, its budget (`app.journal.budget.Budget`), the tokens of
    both stages together, and each stage."""

    provider: str
    model: str | None
    window_source: str
    window: int
    margin: float
    margin_tokens: int
    reserved_output: int
    estimated_input: list[int]
    budget_ok: bool = True
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    stages: list[StageRecord] = []


def stored_json(trace: DraftTrace) -> str:
    """The trace as `journal_drafts.trace_json` holds it."""
    return json.dumps(msgspec.to_builtins(trace))
