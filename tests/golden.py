"""Golden wire bytes: what the code wrote before the typed event payloads and the shared EI
base (issue 20, item 2), recorded from commit 3083346 — events of every producer, stored
turns, the character-state hash, the pipeline's model schemas (as sent and as
`msgspec.json.schema` gives them; the reminders agent's, and the awaiting event that
carries its command, as they are since issue 21 gave it `delete` and `move`). Tests compare what the code writes now with these bytes
and read them back as records a user's Redis already holds."""

from __future__ import annotations

import json
from pathlib import Path

_FILE = Path(__file__).parent / "data" / "wire_golden.json"
_GOLDEN: dict[str, str] = json.loads(_FILE.read_text(encoding="utf-8"))


def golden(name: str) -> bytes:
    return _GOLDEN[name].encode()


def golden_names(prefix: str) -> list[str]:
    return sorted(name for name in _GOLDEN if name.startswith(prefix))
