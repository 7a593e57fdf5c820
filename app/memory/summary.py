"""The prompt that folds the oldest turns into the session summary (seed 000 §3.3).

The turns reach the model through the one history renderer (`whole=True`: the summarizer
must see every turn it folds away, so neither window nor budget applies), so impulses and
turns of unknown occasion carry their labels in the speaker line — the summary outlives the
history and is later read as fact, so it must not turn an impulse into an answer.

The instructions are a text template shipped as package data
(`app/memory/prompts/summary.txt`); a file `prompts/summary.txt` in the data dir replaces it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.memory.render import labels_for, render_history
from app.memory.turns import Turn
from app.settings import Settings
from app.templates import read_template

PURPOSE = "summary"
TEMPLATE = "summary.txt"


def load_template(settings: Settings) -> str:
    """The data dir's `prompts/summary.txt` if present, else the shipped one."""
    return read_template(settings, "app.memory", TEMPLATE)


def summary_messages(
    previous: str | None,
    turns: Sequence[Turn],
    settings: Settings,
    *,
    character_name: str,
    language: str,
) -> list[dict[str, Any]]:
    """System instructions + one user message holding the previous summary and the turns."""
    labels = labels_for(language)
    name = character_name.upper()
    instructions = load_template(settings).format(
        name=name,
        impulse_label=f"{name} ({labels.impulse})",
        unknown_label=f"{name} ({labels.unknown})",
        done=labels.done,
        failed=labels.failed,
    )
    history = render_history(turns, settings, character_name=character_name,
                             language=language, whole=True)
    excerpt = f"Conversation excerpt:\n{history}"
    body = f"Previous summary:\n{previous.strip()}\n\n{excerpt}" if previous else excerpt
    return [{"role": "system", "content": instructions.strip()},
            {"role": "user", "content": body}]
