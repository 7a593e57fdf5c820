"""One table of stage ids (app/pipeline/stages.py): every node and agent that pushes a
`character_stage` is in it, and the web UI maps exactly those ids (no guessing by pattern)."""

from __future__ import annotations

import re

from app.pipeline.agents import AGENTS
from app.pipeline.path1 import PATH1
from app.pipeline.path2 import PATH2
from app.pipeline.stages import STAGES
from tests import ROOT

CHAT_JS = ROOT / "web" / "js" / "chat.js"
KIND_KEYS = {"perceiving": "stage.perceiving", "thinking": "stage.thinking",
             "acting": "stage.acting", "writing": "stage.writing",
             "checking": "stage.checking"}


def ui_stage_keys() -> dict[str, str]:
    block = re.search(r"const STAGE_KEYS = Object\.freeze\(\{(.*?)\}\);", CHAT_JS.read_text(),
                      re.S)
    assert block is not None, "STAGE_KEYS not found in web/js/chat.js"
    return dict(re.findall(r"^\s*(\w+): \"(stage\.\w+)\",?$", block.group(1), re.M))


def test_every_node_and_agent_has_a_stage_id() -> None:
    sent = {node.name for node in (*PATH1, *PATH2)} | set(AGENTS) | {"path1", "responder"}
    assert sent <= set(STAGES), sent - set(STAGES)


def test_the_ui_maps_exactly_the_servers_stage_ids() -> None:
    assert ui_stage_keys() == {stage: KIND_KEYS[kind] for stage, kind in STAGES.items()}
