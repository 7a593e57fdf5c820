"""The character's state between turns (design §4, seed 000 §2.1/§2.3, seed 001 §4).

- `nova_state:{user}:{character}` (hash, no TTL): the nine EI dimensions, the two space axes
  `raum_tiefe`/`raum_naehe` and the two clocks of the character's own time, `turn_zeit` (when
  the state was last computed by a turn) and `nutzer_zeit` (the last user event). Loaded at
  the start of every character run, saved at its end; the seed's defaults on the first turn.
- `haltung:{user}:{character}`, the stance computed from this state, is `app.memory.stance`.

The pure functions:

- `decay`: between turns the state relaxes linearly toward its baseline and reaches it after
  `eigenzeit_nullpunkt_seconds` of quiet (measured from `turn_zeit`). Numbers move
  continuously; labels (emotion, mode, …) switch to the baseline at the null point.
  `session_ttl` stays above that null point (settings check): the history never vanishes
  before the mood has settled.
- `empathy_switch`: a user event moves the character's numbers toward the user's perceived
  state by α and applies decay; a character event (continue, impulse) applies decay only.
  Labels are not blended (there is no halfway between two emotions); the character's own EI
  calculation sets them.
- `validate_thought_arousal`: where a thought's arousal enters: a float in [0.0, 1.0], or
  None for "no level". A bool, a string or an out-of-range value is rejected and reported,
  never clamped — an invented number would look like a measurement.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any, Literal

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.typing import EncodableT, FieldT

from app.core.emotion import LABELS, Emotion
from app.core.log import fields
from app.memory import keys
from app.memory.commit import Blind, Write

log = logging.getLogger(__name__)

EventSource = Literal["user", "character"]


class CharacterState(Emotion, kw_only=True):
    """`nova_state`: the nine EI dimensions with the seed's first-turn defaults (the character
    always has an arousal), the space axes and the clocks; English attributes, the seed's
    hash field names on the wire."""

    emotion: str = "neutral"
    arousal: float = 0.5
    mode: str = "alltag"
    space_depth: float | None = msgspec.field(default=None, name="raum_tiefe")
    space_closeness: float | None = msgspec.field(default=None, name="raum_naehe")
    turn_time: float | None = msgspec.field(default=None, name="turn_zeit")
    user_time: float | None = msgspec.field(default=None, name="nutzer_zeit")


BASELINE = CharacterState()
_NUMBERS = ("arousal", "space_depth", "space_closeness")


class ThoughtArousalError(ValueError):
    """A thought's arousal that is not a float in [0.0, 1.0] (and not None)."""


# --- Redis -------------------------------------------------------------------------------------


async def load_state(redis: aioredis.Redis, user_id: str, character_id: str) -> CharacterState:
    """The stored state; the seed's defaults for missing fields (or a first turn)."""
    stored = await redis.hgetall(keys.nova_state(user_id, character_id))
    return _state_from_hash(keys.text_hash(stored), keys.pair_id(user_id, character_id))


def queue_load_state(
    pipe: Pipeline, user_id: str, character_id: str
) -> Callable[[list[Any]], CharacterState]:
    """`load_state`'s read queued on a pipeline the caller executes (one snapshot and round
    trip with other reads of the pair); the returned function picks the state out of the
    pipeline's results."""
    index = len(pipe)
    pipe.hgetall(keys.nova_state(user_id, character_id))
    pair = keys.pair_id(user_id, character_id)
    return lambda results: _state_from_hash(results[index], pair)


async def save_state(
    redis: aioredis.Redis, user_id: str, character_id: str, state: CharacterState
) -> None:
    """Write every field (None as an empty string); no TTL."""
    await redis.hset(keys.nova_state(user_id, character_id), mapping=_state_to_hash(state))


def save_state_write(user_id: str, character_id: str, state: CharacterState) -> Write:
    """`save_state` as one part of a turn's commit (`app.memory.commit`)."""
    key, mapping = keys.nova_state(user_id, character_id), _state_to_hash(state)

    def queue(pipe: Pipeline) -> None:
        pipe.hset(key, mapping=mapping)

    return Blind(queue)


_STATE_FIELDS = msgspec.structs.fields(CharacterState)  # resolved once, not per load


def _state_from_hash(stored: dict[str, str], pair: str) -> CharacterState:
    values: dict[str, Any] = {}
    for field in _STATE_FIELDS:
        raw = stored.get(field.encode_name)
        if raw is None or (raw == "" and field.name not in LABELS):
            continue  # absent (or an empty number): the default applies
        try:
            value = msgspec.convert(raw, field.type, strict=False)
        except msgspec.ValidationError:
            _warn_unreadable(pair, field.encode_name, raw)
            continue
        if field.name == "arousal" and not in_unit_range(value):
            _warn_unreadable(pair, field.encode_name, raw)
            continue
        values[field.name] = value
    return CharacterState(**values)


def _state_to_hash(state: CharacterState) -> dict[FieldT, EncodableT]:
    wire = msgspec.to_builtins(state)
    return {name: "" if value is None else str(value) for name, value in wire.items()}


def _warn_unreadable(pair: str, name: str, raw: str) -> None:
    log.warning(
        "stored character state field unreadable; default used",
        extra=fields(pair=pair, field=name, value=repr(raw)),
    )


# --- pure functions ----------------------------------------------------------------------------


def relaxation_left(state: CharacterState, now: float, nullpunkt_seconds: float) -> float:
    """How much of the state's distance to its baseline is left: 1.0 just after its turn,
    falling linearly to 0.0 after `nullpunkt_seconds` of quiet. 1.0 when no clock is set."""
    since = state.turn_time if state.turn_time is not None else state.user_time
    if since is None:
        return 1.0
    quiet = max(0.0, now - since)
    return max(0.0, 1.0 - quiet / nullpunkt_seconds)


def decay(
    state: CharacterState, now: float, nullpunkt_seconds: float, baseline: CharacterState = BASELINE
) -> CharacterState:
    """The state relaxed toward `baseline` for the quiet since `turn_zeit`; clocks unchanged.

    Measures from the stored clock, so apply it once per turn (the turn then stamps
    `turn_zeit` through `empathy_switch`) — not again on an already decayed state.
    """
    left = relaxation_left(state, now, nullpunkt_seconds)
    if left >= 1.0:
        return state
    changes: dict[str, Any] = {}
    for name in _NUMBERS:
        value, base = getattr(state, name), getattr(baseline, name)
        if left == 0.0:
            changes[name] = base
        elif value is not None and base is not None:
            changes[name] = base + (value - base) * left
    if left == 0.0:
        changes.update({name: getattr(baseline, name) for name in LABELS})
    return msgspec.structs.replace(state, **changes)


def empathy_switch(
    state: CharacterState,
    source: EventSource,
    now: float,
    *,
    alpha: float,
    nullpunkt_seconds: float,
    user_arousal: float | None = None,
    baseline: CharacterState = BASELINE,
) -> CharacterState:
    """The character's state for a run triggered by `source` (seed 001 §4).

    user: decay, then move the arousal toward the user's perceived arousal by `alpha`
    (no move when it is unknown); stamps `turn_zeit` and `nutzer_zeit`.
    character (continue, impulse): decay only; stamps `turn_zeit`.
    `baseline` is the state decay relaxes toward (a character definition's own baseline).
    """
    decayed = decay(state, now, nullpunkt_seconds, baseline)
    if source == "user":
        arousal = decayed.arousal
        if user_arousal is not None:
            arousal += alpha * (user_arousal - arousal)
        return msgspec.structs.replace(decayed, arousal=arousal, turn_time=now, user_time=now)
    if source == "character":
        return msgspec.structs.replace(decayed, turn_time=now)
    raise ValueError(f"event source must be 'user' or 'character', not {source!r}")


def validate_thought_arousal(value: object) -> float | None:
    """A thought's own arousal as it enters: a float in [0.0, 1.0], or None for no level.

    Raises `ThoughtArousalError` (and logs a warning) for a bool, a string, any other type,
    NaN or a value outside [0, 1] — rejected, never clamped. An int 0 or 1 is a number, but
    `True` is not: in Python it would pass as 1.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problem = f"is a {type(value).__name__}, not a float"
    elif not in_unit_range(float(value)):
        problem = "is outside [0.0, 1.0]"
    else:
        return float(value)
    log.warning("gedanke_arousal rejected", extra=fields(value=repr(value), problem=problem))
    raise ThoughtArousalError(f"gedanke_arousal {value!r} {problem}")


def raise_arousal(state: CharacterState, level: float | None) -> CharacterState:
    """A thought's arousal raises the loaded arousal when it is higher (seed 001 §3.1.1)."""
    if level is None or level <= state.arousal:
        return state
    return msgspec.structs.replace(state, arousal=level)


def in_unit_range(value: float) -> bool:
    """A finite float in [0.0, 1.0] (arousal and every other level): the one check."""
    return math.isfinite(value) and 0.0 <= value <= 1.0
