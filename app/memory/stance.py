"""The character's stance — `haltung:{user}:{character}` (seed 000 §2.1, the `haltungsraum`).

Every character run computes the stance from the state it ends with and the dispatcher writes
it with that state, in the turn's one commit: the five behaviour quantities, the `cluster`
they fall in, the run's `turn_id` and `zeit` (when the answer was stored), the flag
`gerechnet` and a `grund`. It is written **even when nothing could be computed**
(`gerechnet` = 0, the `grund` says why, no quantity): an old stance never stands unmarked.
A run that ends without an answer (a rejected answer, a failed model call) writes neither
state nor stance — like everything else of that run.

The stance space (`haltungsraum`) has two axes, depth (`raum_tiefe`) and closeness
(`raum_naehe`). They are `nova_state`'s own when set; otherwise they are derived from the
register labels (seed 000 §5: "fehlen die Achsen, werden sie aus den Register-Labels
abgeleitet") — depth from the mode, closeness from the relationship dynamic, else the tone.
A label outside the seeds' vocabulary gives no axis; without both axes nothing is computed.
The computation is deterministic and asks no model.

The five quantities (hash fields under their German names), each in [0, 1]:

- `energie`: the arousal;
- `tiefe`, `naehe`: the two axes;
- `waerme`: how warm the character's emotion is, averaged with the closeness (the closeness
  alone when the emotion is outside the vocabulary — the `grund` says so);
- `tempo`: the energy, slowed by depth (a deep conversation goes slower).

The `cluster` is the region of the space: `haltend` in a crisis whatever the numbers, else
by closeness and energy `lebhaft`, `zugewandt`, `angespannt` or `zurueckhaltend`.
"""

from __future__ import annotations

import logging

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.typing import EncodableT, FieldT

from app.core.emotion import STORED_NAMES
from app.core.log import fields
from app.memory import keys
from app.memory.commit import Blind, Write
from app.memory.state import CharacterState

log = logging.getLogger(__name__)


class Stance(msgspec.Struct):
    """`haltung`: the last computed stance. `quantities` are the behaviour values by name."""

    quantities: dict[str, float] = msgspec.field(default_factory=dict)
    cluster: str = ""
    turn_id: str = ""
    time: float | None = None
    computed: bool = False
    reason: str = ""


QUANTITIES = ("energie", "tiefe", "naehe", "waerme", "tempo")

# The axes from the register labels (the seeds' German vocabulary).
DEPTH_OF_MODE: dict[str, float] = {"spiel": 0.2, "alltag": 0.3, "tiefgang": 0.8, "krise": 0.9}
CLOSENESS_OF_DYNAMIC: dict[str, float] = {
    "distanz": 0.2,
    "neutral": 0.5,
    "vertrauen": 0.7,
    "naehe": 0.8,
}
CLOSENESS_OF_TONE: dict[str, float] = {
    "sachlich": 0.35,
    "neutral": 0.5,
    "verspielt": 0.6,
    "behutsam": 0.65,
    "empathisch": 0.7,
    "herzlich": 0.75,
}
# How warm an emotion of the character (or the user's, which it may take over) is.
WARMTH_OF_EMOTION: dict[str, float] = {
    "wut": 0.15,
    "ekel": 0.15,
    "stress": 0.3,
    "angst": 0.35,
    "trauer": 0.4,
    "erschoepfung": 0.4,
    "neutral": 0.5,
    "ueberraschung": 0.55,
    "ruhe": 0.6,
    "neugier": 0.65,
    "freude": 0.8,
    "begeisterung": 0.8,
    "dankbarkeit": 0.8,
    "mitgefuehl": 0.85,
    "fuersorge": 0.85,
    "liebe": 0.9,
    "zuneigung": 0.9,
}
CRISIS_MODE = "krise"
LIVELY = 0.6  # energy from which the stance counts as lively (or tense, when distant)
CLOSE = 0.5  # closeness from which the stance counts as turned toward the user

_FIELDS = {
    "cluster": "cluster",
    "turn_id": "turn_id",
    "time": "zeit",
    "computed": "gerechnet",
    "reason": "grund",
}
_TRUE = frozenset({"1", "true", "True", "yes"})


# --- the computation ---------------------------------------------------------------------------


def compute_stance(state: CharacterState, *, turn_id: str, now: float) -> Stance:
    """The stance of `state` (the state a character run ends with), stamped with the run."""
    depth, depth_from = _axis(state.space_depth, "raum_tiefe", (DEPTH_OF_MODE, "mode", state.mode))
    closeness, closeness_from = _axis(
        state.space_closeness,
        "raum_naehe",
        (CLOSENESS_OF_DYNAMIC, "relationship_dynamic", state.relationship_dynamic),
        (CLOSENESS_OF_TONE, "tone", state.tone),
    )
    if depth is None or closeness is None:
        missing = [
            why
            for value, why in ((depth, depth_from), (closeness, closeness_from))
            if value is None
        ]
        return Stance(
            turn_id=turn_id, time=now, computed=False, reason="kein raum: " + "; ".join(missing)
        )
    energy = state.arousal
    warmth = WARMTH_OF_EMOTION.get(state.emotion)
    reasons = [f"tiefe aus {depth_from}", f"naehe aus {closeness_from}"]
    if warmth is None:
        reasons.append(f"emotion {state.emotion!r} unbekannt: waerme aus naehe")
        warmth = closeness
    else:
        warmth = (warmth + closeness) / 2
    values = (energy, depth, closeness, warmth, energy * (1.0 - depth / 2))
    return Stance(
        quantities={name: round(value, 4) for name, value in zip(QUANTITIES, values, strict=True)},
        cluster=_cluster(state.mode, energy, closeness),
        turn_id=turn_id,
        time=now,
        computed=True,
        reason="; ".join(reasons),
    )


def _axis(
    stored: float | None, name: str, *labels: tuple[dict[str, float], str, str]
) -> tuple[float | None, str]:
    """An axis and where it came from: `nova_state`'s own value, else the first register
    label (table, attribute, label) that the vocabulary knows; the reason names the label by
    its stored German name."""
    if stored is not None:
        return stored, name
    tried = []
    for table, attribute, label in labels:
        field = STORED_NAMES.get(attribute, attribute)
        if label in table:
            return table[label], f"{field}={label}"
        tried.append(f"{field}={label!r}")
    return None, f"{name} fehlt, unbekannt: {', '.join(tried)}"


def _cluster(mode: str, energy: float, closeness: float) -> str:
    if mode == CRISIS_MODE:
        return "haltend"
    if closeness >= CLOSE:
        return "lebhaft" if energy >= LIVELY else "zugewandt"
    return "angespannt" if energy >= LIVELY else "zurueckhaltend"


# --- Redis -------------------------------------------------------------------------------------


async def load_stance(redis: aioredis.Redis, user_id: str, character_id: str) -> Stance:
    stored = await redis.hgetall(keys.haltung(user_id, character_id))
    return _stance_from_hash(keys.text_hash(stored), keys.pair_id(user_id, character_id))


async def save_stance(
    redis: aioredis.Redis, user_id: str, character_id: str, stance: Stance
) -> None:
    """Replace the stored stance whole (a quantity no longer computed must not linger)."""
    async with redis.pipeline(transaction=True) as pipe:
        _queue_replace(pipe, keys.haltung(user_id, character_id), _stance_to_hash(stance))
        await pipe.execute()


def save_stance_write(user_id: str, character_id: str, stance: Stance) -> Write:
    """`save_stance` as one part of a turn's commit (`app.memory.commit`)."""
    key, mapping = keys.haltung(user_id, character_id), _stance_to_hash(stance)
    return Blind(lambda pipe: _queue_replace(pipe, key, mapping))


def _queue_replace(pipe: Pipeline, key: str, mapping: dict[FieldT, EncodableT]) -> None:
    pipe.delete(key)
    pipe.hset(key, mapping=mapping)


def _stance_from_hash(stored: dict[str, str], pair: str) -> Stance:
    stance = Stance()
    named = {wire: attr for attr, wire in _FIELDS.items()}
    for name, raw in stored.items():
        attr = named.get(name)
        if attr in ("cluster", "turn_id", "reason"):
            setattr(stance, attr, raw)
        elif attr == "computed":
            stance.computed = raw in _TRUE
        elif attr == "time":
            stance.time = _float_or_none(raw, pair, name)
        else:
            value = _float_or_none(raw, pair, name)
            if value is not None:
                stance.quantities[name] = value
    return stance


def _stance_to_hash(stance: Stance) -> dict[FieldT, EncodableT]:
    wire: dict[FieldT, EncodableT] = {
        name: repr(value) for name, value in stance.quantities.items()
    }
    wire.update(
        cluster=stance.cluster,
        turn_id=stance.turn_id,
        grund=stance.reason,
        zeit="" if stance.time is None else repr(stance.time),
        gerechnet="1" if stance.computed else "0",
    )
    return wire


def _float_or_none(raw: str, pair: str, name: str) -> float | None:
    if raw == "":
        return None
    try:
        return float(raw)
    except ValueError:
        log.warning(
            "stored stance field unreadable; left out",
            extra=fields(pair=pair, field=name, value=repr(raw)),
        )
        return None
