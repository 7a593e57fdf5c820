"""The writing profile's read models, as msgspec structs the API encodes. Field order is the
answer's key order.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Evidence(msgspec.Struct):
    """A review candidate (`GET /api/profile/evidence`): a text of the user with the signal
    that chose it; `new`: stored after the newest proposal."""

    evidence_id: str
    signal: str
    ref: str
    text: str
    occurred_at: float
    context_hint: str
    new: bool
    created_at: float
    measure: Any  # the local measures that chose it, as stored (JSON)
