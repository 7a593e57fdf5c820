"""What the offline model answers for the journal's two stages (SPEC §8, issue 13 item 11).

Listed in `PURPOSE_HANDLERS`, which the wiring composes into the offline model's answers
(`app.wiring.purposes`), so the journal works with no model server: stage 1 answers a valid
reconstruction of the day built from its own lines (every user line in order, its whole text
as the one claim's evidence, a time token when the line holds one), stage 2 a plain entry made
of the artifact's lines.
"""

from __future__ import annotations

import json
from typing import Any

from app.journal import times
from app.journal.schema import PURPOSE_NARRATE, PURPOSE_RECONSTRUCT
from app.llm.offline.handlers import OfflineRequest


def _payload(request: OfflineRequest) -> dict[str, Any]:
    content = next((m["content"] for m in reversed(request.messages) if m["role"] == "user"),
                   "{}")
    try:
        payload = json.loads(content)
    except json.JSONDecodeError:
        return {}
    return payload if isinstance(payload, dict) else {}


def reconstruct(request: OfflineRequest) -> dict[str, Any]:
    users = [s for s in _payload(request).get("sources", [])
             if isinstance(s, dict) and s.get("role") == "user"]
    chronology = []
    for source in users:
        found = times.find(source["text"])
        chronology.append({"source_id": source["id"], "source": "user",
                           "time": found[0] if len(found) == 1 else None,
                           "claims": [{"kind": "statement",
                                       "evidence": times.normalize(source["text"])}]})
    return {"source_order": [s["id"] for s in users], "chronology": chronology}


def narrate(request: OfflineRequest) -> str:
    # Each line whole, in the artifact's order (a confirmed time stands in its own line).
    return "\n\n".join(source.get("text", "").strip()
                       for source in _payload(request).get("sources", [])
                       if isinstance(source, dict))


PURPOSE_HANDLERS = {PURPOSE_RECONSTRUCT: reconstruct, PURPOSE_NARRATE: narrate}
