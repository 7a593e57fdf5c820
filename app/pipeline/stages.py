"""The stage ids the server sends in `character_stage` (design §9), and what each means to a
person: the one table. A stage id is the name of the pipeline node (or agent) that runs; the
web UI maps these ids to its labels (`STAGE_KEYS` in web/js/chat.js), and
tests/pipeline/test_stages.py keeps the two in step with the nodes that exist.
"""

from __future__ import annotations

from typing import Literal

StageKind = Literal["perceiving", "thinking", "acting", "writing", "checking"]

STAGES: dict[str, StageKind] = {
    # path 1 (the UI shows every path-1 stage as "perceiving")
    "perception": "perceiving",
    "path1": "perceiving",  # the runtime's minimal pipelines (app.runtime.minimal)
    # path 2
    "state": "thinking",
    "enricher": "thinking",
    "ei_calc": "thinking",
    "router": "thinking",
    "planner": "acting",
    "lists": "acting",
    "reminders": "acting",
    "conversation_vector": "writing",
    "responder": "writing",
    "thinker": "checking",
    "tribunal": "checking",
    "salience": "writing",
    "dispatcher": "writing",
}
