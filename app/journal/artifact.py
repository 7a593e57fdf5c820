"""The `VerifiedArtifact` (SPEC §8): built locally; the only content stage 2 ever sees.

Every selected user line is in it with its full, canonical text — rehydrated from the day's
sources, never taken from the model: a claim never shortens its source. With a valid
reconstruction the lines follow its chronology and carry their confirmed time tokens, and
the sourced corrections, uncertainties, contradictions and plan changes come along; with a
fallback the lines keep their own order and nothing of the model's JSON is used. Model
labels (`kind`) are dropped; assistant text never enters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from app.journal.day import Source, user_sources
from app.journal.schema import SOURCED_FIELDS

Status = Literal["valid", "fallback"]


def build_artifact(sources: Sequence[Source], model_json: Any,
                   codes: Sequence[str] | None) -> dict[str, Any]:
    """The artifact for stage 2. `codes` None or non-empty (or no JSON) means fallback."""
    users = user_sources(sources)
    valid = codes is not None and not codes and isinstance(model_json, Mapping)
    if not valid:
        return _artifact("fallback", [{"source_id": s.source_id, "text": s.text} for s in users],
                         {name: [] for name in SOURCED_FIELDS})
    by_id = {s.source_id: s for s in users}
    lines: list[dict[str, str]] = []
    seen: set[str] = set()
    for item in model_json["chronology"]:
        source_id = item["source_id"]
        if source_id in seen:
            continue
        seen.add(source_id)
        line = {"source_id": source_id, "text": by_id[source_id].text}
        if item.get("time") is not None:
            line["time"] = item["time"]
        lines.append(line)
    sourced = {name: [{"source_id": entry["source_id"], "evidence": entry["evidence"]}
                      for entry in model_json.get(name) or []]
               for name in SOURCED_FIELDS}
    return _artifact("valid", lines, sourced)


def _artifact(status: Status, lines: list[dict[str, str]],
              sourced: Mapping[str, list[dict[str, str]]]) -> dict[str, Any]:
    return {"kind": "verified_artifact", "reconstruction_status": status, "sources": lines,
            "corrections": sourced["corrections"], "uncertainties": sourced["uncertainties"],
            "contradictions": sourced["contradictions"], "plan_changes": sourced["plan_changes"]}


def local_draft(date: str, artifact: Mapping[str, Any]) -> str:
    """The honest entry made without a model (stage 2's fallback): the user's own lines as a
    dated list, each whole, in the artifact's order (a confirmed time is in its own line)."""
    return "\n".join([date, "", *(f"- {source['text']}" for source in artifact["sources"])])
