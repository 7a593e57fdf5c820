"""The one reader of what a character run reacts to (the seed's `graph/reiz.py`).

Nobody else reads the stimulus slots of an event payload:

- an own impulse (`reiz_herkunft = eigener_impuls`) brings its thought in `eigener_gedanke`
  and **no** `user_prompt`: nobody spoke. A thought is never shown as the user's words, and
  an impulse without a thought is a defect (`ImpulseWithoutThought`), with no fallback to
  the user slot (seed 001 §3.1.1);
- a `continue` event brings what the character wanted (`absicht`, or `commitment` when it
  promised to do something) or, for the thinker's retry, `retry` and `grund`; the retry
  repeats the real request of the turn it inherits;
- a user event brings the user's words (`user_prompt`, else the stored user turn).

`gedanke_arousal` is read through the one validator (`app.memory.state.
validate_thought_arousal`), which rejects and reports a bool, a string or an out-of-range
value; a rejected level counts as no level, never as a clamped one.
"""

from __future__ import annotations

from typing import Any

from app.memory.state import ThoughtArousalError, validate_thought_arousal
from app.memory.turns import Turn
from app.pipeline.state import Stimulus
from app.pipeline.vocabulary import (
    OWN_IMPULSE,
    P_COMMITMENT,
    P_INTENT,
    P_REASON,
    P_RETRY,
    P_STIMULUS_ORIGIN,
    P_THOUGHT,
    P_THOUGHT_AROUSAL,
    P_USER_PROMPT,
    RETRY_BY_THINKER,
    ImpulseWithoutThought,
)


def read_stimulus(typ: str, payload: dict[str, Any], request_turn: Turn | None) -> Stimulus:
    if payload.get(P_STIMULUS_ORIGIN) == OWN_IMPULSE and typ != "continue":
        thought = payload.get(P_THOUGHT)
        if not isinstance(thought, str) or not thought.strip():
            raise ImpulseWithoutThought(f"impulse without a thought: {thought!r}")
        return Stimulus(kind="thought", text=thought.strip())
    request = request_turn.content if request_turn is not None else ""
    if typ == "continue":
        if payload.get(P_RETRY):
            return Stimulus(kind="retry", text=request, reason=str(payload.get(P_REASON) or ""))
        commitment = payload.get(P_COMMITMENT)
        if isinstance(commitment, str) and commitment.strip():
            return Stimulus(kind="continue", intent=commitment.strip(), commitment=True,
                            text=request)
        intent = payload.get(P_INTENT)
        return Stimulus(kind="continue", text=request,
                        intent=intent.strip() if isinstance(intent, str) else "")
    words = payload.get(P_USER_PROMPT)
    return Stimulus(kind="user", text=words if isinstance(words, str) and words else request)


def thought_level(payload: dict[str, Any]) -> float | None:
    """The thought's own arousal, or None (absent, no level, or rejected and reported)."""
    try:
        return validate_thought_arousal(payload.get(P_THOUGHT_AROUSAL))
    except ThoughtArousalError:
        return None  # the validator has reported it


def retry_payload(reason: str) -> dict[str, Any]:
    return {P_RETRY: RETRY_BY_THINKER, P_REASON: reason}


def follow_up_payload(*, commitment: bool, intent: str) -> dict[str, Any]:
    return {P_COMMITMENT: intent or "1"} if commitment else {P_INTENT: intent}
