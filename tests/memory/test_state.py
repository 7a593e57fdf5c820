"""Character state: load/save with the seed's defaults, decay, empathy switch, thought arousal."""

from __future__ import annotations

import json
import logging
import math

import msgspec
import pytest
import redis.asyncio as aioredis

from app.core.settings import SettingsError, defaults
from app.memory import keys
from app.memory.stance import Stance, load_stance, save_stance
from app.memory.state import (
    BASELINE,
    CharacterState,
    ThoughtArousalError,
    _state_to_hash,
    decay,
    empathy_switch,
    load_state,
    raise_arousal,
    save_state,
    validate_thought_arousal,
)
from tests.golden import golden

U, C = "local", "nova"
H = 3600.0
N = 3 * H  # eigenzeit_nullpunkt_seconds
T0 = 1_700_000_000.0


def excited(**changes: object) -> CharacterState:
    base = CharacterState(emotion="freude", arousal=0.9, emotions_vector="steigend", mode="tief",
                          language_style="verspielt", relationship_dynamic="naehe",
                          tone="warm", intent="teilen", prompt_topic="reise",
                          space_depth=0.8, space_closeness=0.2, turn_time=T0, user_time=T0 - 60)
    return msgspec.structs.replace(base, **changes)


# --- the two constants held together -----------------------------------------------------------

def test_session_ttl_stays_above_the_decay_null_point() -> None:
    settings = defaults()
    assert settings.session_ttl == 14400 and settings.eigenzeit_nullpunkt_seconds == 10800
    assert settings.session_ttl > settings.eigenzeit_nullpunkt_seconds
    with pytest.raises(SettingsError, match="session_ttl"):
        defaults(session_ttl=10800)
    with pytest.raises(SettingsError, match="eigenzeit_nullpunkt_seconds"):
        defaults(eigenzeit_nullpunkt_seconds=20000)


# --- load / save -------------------------------------------------------------------------------

async def test_first_turn_loads_the_seeds_defaults(redis_client: aioredis.Redis) -> None:
    state = await load_state(redis_client, U, C)
    assert state == BASELINE
    assert (state.emotion, state.arousal, state.mode) == ("neutral", 0.5, "alltag")
    assert state.tone == "" and state.space_depth is None and state.turn_time is None


async def test_state_round_trips_under_the_seeds_field_names(
        redis_client: aioredis.Redis) -> None:
    state = excited()
    await save_state(redis_client, U, C, state)
    stored = await redis_client.hgetall(keys.nova_state(U, C))
    assert set(stored) == {"emotion", "arousal", "emotions_vector", "mode", "language_style",
                           "relationship_dynamic", "tone", "intent", "prompt_topic",
                           "raum_tiefe", "raum_naehe", "turn_zeit", "nutzer_zeit"}
    assert stored["raum_tiefe"] == "0.8" and stored["turn_zeit"] == repr(T0)
    assert await redis_client.ttl(keys.nova_state(U, C)) == -1  # no TTL
    assert await load_state(redis_client, U, C) == state


async def test_unset_numbers_round_trip_as_none(redis_client: aioredis.Redis) -> None:
    await save_state(redis_client, U, C, CharacterState(emotion=""))
    loaded = await load_state(redis_client, U, C)
    assert loaded.space_depth is None and loaded.user_time is None and loaded.emotion == ""


async def test_a_partial_or_damaged_hash_loads_with_defaults_and_a_warning(
        redis_client: aioredis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    await redis_client.hset(keys.nova_state(U, C), mapping={
        "emotion": "trauer", "arousal": "sehr", "raum_naehe": "0.4", "fremd": "x"})
    with caplog.at_level(logging.WARNING):
        state = await load_state(redis_client, U, C)
    assert state == CharacterState(emotion="trauer", space_closeness=0.4)
    assert [r.fields["field"] for r in caplog.records] == ["arousal"]


async def test_a_stored_arousal_out_of_range_is_not_taken(redis_client: aioredis.Redis) -> None:
    await redis_client.hset(keys.nova_state(U, C), mapping={"arousal": "1.7"})
    assert (await load_state(redis_client, U, C)).arousal == 0.5


async def test_stance_defaults_round_trip_and_replacement(redis_client: aioredis.Redis) -> None:
    assert await load_stance(redis_client, U, C) == Stance()
    stance = Stance(quantities={"waerme": 0.7, "tempo": 0.3}, cluster="zugewandt", turn_id="t9",
                    time=T0, computed=True, reason="")
    await save_stance(redis_client, U, C, stance)
    stored = await redis_client.hgetall(keys.haltung(U, C))
    assert stored["gerechnet"] == "1" and stored["cluster"] == "zugewandt"
    assert await load_stance(redis_client, U, C) == stance
    # Saved even when nothing could be computed, and no old quantity lingers.
    nothing = Stance(turn_id="t10", time=T0 + 5, computed=False, reason="keine Wahrnehmung")
    await save_stance(redis_client, U, C, nothing)
    assert await load_stance(redis_client, U, C) == nothing
    assert await redis_client.ttl(keys.haltung(U, C)) == -1


# --- decay -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("quiet", "arousal", "depth", "emotion"), [
    (0.0, 0.9, 0.8, "freude"),
    (N / 4, 0.8, 0.8, "freude"),          # numbers move; the baseline has no depth to move to
    (N / 2, 0.7, 0.8, "freude"),
    (N * 0.999, 0.5004, 0.8, "freude"),
    (N, 0.5, None, "neutral"),            # the null point: everything is at the baseline
    (10 * N, 0.5, None, "neutral"),
    (-60.0, 0.9, 0.8, "freude"),          # a clock in the future decays nothing
])
def test_decay_table(quiet: float, arousal: float, depth: float | None, emotion: str) -> None:
    state = decay(excited(), T0 + quiet, N)
    assert math.isclose(state.arousal, arousal, abs_tol=1e-9)
    assert state.space_depth == depth and state.emotion == emotion
    assert state.turn_time == T0  # decay is a view; the clocks stay


def test_decay_reaches_every_baseline_field_at_the_null_point() -> None:
    settled = decay(excited(), T0 + N, N)
    assert msgspec.structs.replace(settled, turn_time=None, user_time=None) == BASELINE


def test_decay_toward_a_baseline_below_the_state() -> None:
    low = CharacterState(arousal=0.1, turn_time=T0)
    assert math.isclose(decay(low, T0 + N / 2, N).arousal, 0.3)


def test_decay_falls_back_to_the_user_clock_and_does_nothing_without_clocks() -> None:
    assert decay(excited(turn_time=None), T0 - 60 + N, N).arousal == 0.5
    never = excited(turn_time=None, user_time=None)
    assert decay(never, T0 + 100 * N, N) == never


# --- empathy switch ----------------------------------------------------------------------------

@pytest.mark.parametrize(("source", "quiet", "user_arousal", "arousal", "user_time"), [
    ("user", 0.0, 0.1, 0.9 + 0.3 * (0.1 - 0.9), T0),        # toward the user by alpha
    ("user", N / 2, 0.1, 0.7 + 0.3 * (0.1 - 0.7), None),    # decay first, then empathy
    ("user", N, 1.0, 0.5 + 0.3 * (1.0 - 0.5), None),
    ("user", 0.0, None, 0.9, T0),                           # unknown user state: decay only
    ("character", 0.0, 0.1, 0.9, T0 - 60),                  # own event: no empathy …
    ("character", N / 2, 0.1, 0.7, T0 - 60),                # … decay only
    ("character", 2 * N, 1.0, 0.5, T0 - 60),
])
def test_empathy_switch_table(source: str, quiet: float, user_arousal: float | None,
                              arousal: float, user_time: float | None) -> None:
    now = T0 + quiet
    state = empathy_switch(excited(), source, now, alpha=0.3, nullpunkt_seconds=N,  # type: ignore[arg-type]
                           user_arousal=user_arousal)
    assert math.isclose(state.arousal, arousal, abs_tol=1e-9)
    assert state.turn_time == now
    assert state.user_time == (now if source == "user" else user_time)


def test_empathy_switch_with_alpha_zero_and_one() -> None:
    assert empathy_switch(excited(), "user", T0, alpha=0.0, nullpunkt_seconds=N,
                          user_arousal=0.1).arousal == 0.9
    assert math.isclose(empathy_switch(excited(), "user", T0, alpha=1.0, nullpunkt_seconds=N,
                                       user_arousal=0.1).arousal, 0.1)


def test_empathy_switch_relaxes_toward_the_characters_own_baseline() -> None:
    calm = CharacterState(emotion="gelassen", arousal=0.2, mode="ruhig", space_depth=0.6)
    settled = empathy_switch(excited(), "character", T0 + N, alpha=0.3, nullpunkt_seconds=N,
                             baseline=calm)
    assert (settled.emotion, settled.arousal, settled.mode, settled.space_depth) == \
        ("gelassen", 0.2, "ruhig", 0.6)
    halfway = empathy_switch(excited(), "character", T0 + N / 2, alpha=0.3,
                             nullpunkt_seconds=N, baseline=calm)
    assert math.isclose(halfway.arousal, 0.55) and math.isclose(halfway.space_depth or 0, 0.7)


def test_empathy_switch_rejects_an_unknown_source() -> None:
    with pytest.raises(ValueError, match="event source"):
        empathy_switch(excited(), "system", T0, alpha=0.3, nullpunkt_seconds=N)  # type: ignore[arg-type]


# --- a thought's own arousal -------------------------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    (None, None), (0.0, 0.0), (0.35, 0.35), (1.0, 1.0), (0, 0.0), (1, 1.0),
])
def test_thought_arousal_accepted(value: object, expected: float | None) -> None:
    assert validate_thought_arousal(value) == expected


@pytest.mark.parametrize("value", [
    True, False, "0.5", "", 1.0000001, -0.01, 2, float("nan"), float("inf"), [0.5], {"a": 1},
])
def test_thought_arousal_rejected_and_reported_never_clamped(
        value: object, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), pytest.raises(ThoughtArousalError):
        validate_thought_arousal(value)
    assert [r.msg for r in caplog.records] == ["gedanke_arousal rejected"]


@pytest.mark.parametrize(("loaded", "level", "expected"), [
    (0.4, 0.8, 0.8), (0.8, 0.4, 0.8), (0.5, None, 0.5), (0.5, 0.5, 0.5),
])
def test_a_thought_raises_arousal_only_when_higher(loaded: float, level: float | None,
                                                   expected: float) -> None:
    assert raise_arousal(CharacterState(arousal=loaded), level).arousal == expected


def test_the_state_hash_is_written_as_before() -> None:
    # Field names and their order: the EI base the state extends must not move a field.
    state = CharacterState(space_depth=0.25, turn_time=5.0)
    assert list(_state_to_hash(state).items()) == [tuple(p) for p in json.loads(
        golden("character_state_hash"))]
