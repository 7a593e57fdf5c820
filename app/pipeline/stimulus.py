"""The one reader of what a character run reacts to (the seed's `graph/reiz.py`).

Nobody else reads the stimulus slots of an event payload (`app.pipeline.vocabulary`):

- an own impulse (`ImpulsePayload`: `reiz_herkunft = eigener_impuls`) brings its thought in
  `eigener_gedanke` and **no** `user_prompt`: nobody spoke. A thought is never shown as the
  user's words, and an impulse without a thought is a defect (`ImpulseWithoutThought`), with
  no fallback to the user slot (seed 001 §3.1.1);
- a `continue` event (`ContinuePayload`) brings what the character wanted (`absicht`, or
  `commitment` when it promised to do something) or, for the thinker's retry, `retry` and
  `grund`; the retry repeats the real request of the turn it inherits;
- a user event (`UserPayload`) brings the user's words (`user_prompt`, else the stored user
  turn).

`gedanke_arousal` was validated where it entered (the impulse's producer, the payload's type
where the stored event was read: a bool, a string or an out-of-range value is rejected and
reported, never clamped); a rejected level reads as no level.

`retry_request` and `follow_up_request` are the two `Continue` requests a run can make.
"""

from __future__ import annotations

from msgspec import UnsetType

from app.memory.turns import Turn
from app.pipeline.state import Stimulus
from app.pipeline.vocabulary import (
    RETRY_BY_THINKER,
    Continue,
    ContinuePayload,
    EventPayload,
    ImpulsePayload,
    ImpulseWithoutThought,
    UserPayload,
)


def read_stimulus(payload: EventPayload, request_turn: Turn | None) -> Stimulus:
    if isinstance(payload, ImpulsePayload):
        if not payload.thought.strip():
            raise ImpulseWithoutThought(f"impulse without a thought: {payload.thought!r}")
        return Stimulus(kind="thought", text=payload.thought.strip())
    request = request_turn.content if request_turn is not None else ""
    if isinstance(payload, ContinuePayload):
        if payload.retry:
            return Stimulus(kind="retry", text=request, reason=_set(payload.reason))
        commitment = _set(payload.commitment).strip()
        if commitment:
            return Stimulus(kind="continue", intent=commitment, commitment=True, text=request)
        return Stimulus(kind="continue", text=request, intent=_set(payload.intent).strip())
    words = payload.user_prompt if isinstance(payload, UserPayload) else ""
    return Stimulus(kind="user", text=words or request)


def thought_level(payload: EventPayload) -> float | None:
    """The thought's own arousal, or None (a user event, no level, or rejected and reported
    where the event was read)."""
    if isinstance(payload, ImpulsePayload | ContinuePayload):
        return payload.thought_arousal
    return None


def retry_request(reason: str) -> Continue:
    return Continue(retry=RETRY_BY_THINKER, reason=reason)


def follow_up_request(*, commitment: bool, intent: str) -> Continue:
    return Continue(commitment=intent or "1") if commitment else Continue(intent=intent)


def _set(value: str | UnsetType) -> str:
    """A request field's text; "" when unset."""
    return value if isinstance(value, str) else ""
