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


class ProfileVersion(msgspec.Struct):
    """A version of the profile (`GET /api/profile/versions`): why it was made (a code the
    page words, `version.<code>`, and what it names) and the profile as it was."""

    version: int
    reason: str
    reason_args: dict[str, Any]
    created_at: float
    profile: Any  # the profile document as stored (JSON; `model.encode_profile`)
