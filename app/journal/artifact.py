"""The `VerifiedArtifact` (SPEC §8): built locally; the only content stage 2 ever sees.

Every selected user line is in it with its full, canonical text — rehydrated from the day's
sources, never taken from the model: a claim never shortens its source. With a valid
reconstruction the lines follow its chronology and carry their confirmed time tokens, and
the sourced corrections, uncertainties, contradictions and plan changes come along; with a
fallback the lines keep their own order and nothing of the model's answer is used. Model
labels (`kind`) are dropped; assistant text never enters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from app.journal.day import Source, user_sources
from app.journal.schema import Reconstruction, Sourced

Status = Literal["valid", "fallback"]


class Line(msgspec.Struct, omit_defaults=True):
    """A user line, whole; `time` only where the reconstruction confirmed one."""

    source_id: str
    text: str
    time: str | None = None


class VerifiedArtifact(msgspec.Struct, tag_field="kind", tag="verified_artifact",
                       kw_only=True):
    """SPEC §8 `{"kind": "verified_artifact", "reconstruction_status", "sources",
    "corrections", "uncertainties", "contradictions", "plan_changes"}`."""

    reconstruction_status: Status
    sources: list[Line]
    corrections: list[Sourced] = []
    uncertainties: list[Sourced] = []
    contradictions: list[Sourced] = []
    plan_changes: list[Sourced] = []


def fallback_artifact(sources: Sequence[Source]) -> VerifiedArtifact:
    """Every user line in its own order, nothing of the model's answer."""
    return VerifiedArtifact(reconstruction_status="fallback",
                            sources=[Line(s.source_id, s.text) for s in user_sources(sources)])


def verified_artifact(sources: Sequence[Source], answer: Reconstruction) -> VerifiedArtifact:
    """The artifact of an `answer` the validator passed (no code; any code means the
    fallback): its chronology's order and confirmed times, its sourced notes."""
    by_id = {s.source_id: s for s in user_sources(sources)}
    lines: list[Line] = []
    seen: set[str] = set()
    for item in answer.chronology:
        if item.source_id in seen:
            continue
        seen.add(item.source_id)
        lines.append(Line(item.source_id, by_id[item.source_id].text, item.time))
    return VerifiedArtifact(reconstruction_status="valid", sources=lines,
                            corrections=answer.corrections,
                            uncertainties=answer.uncertainties,
                            contradictions=answer.contradictions,
                            plan_changes=answer.plan_changes)


def local_draft(date: str, artifact: VerifiedArtifact) -> str:
    """The honest entry made without a model (stage 2's fallback): the user's own lines as a
    dated list, each whole, in the artifact's order (a confirmed time is in its own line)."""
    return "\n".join([date, "", *(f"- {line.text}" for line in artifact.sources)])
