"""The stance (`haltung`, seed 000 §2.1): computed from the character's state — the space's
axes from `nova_state` or derived from the register labels — or marked as not computed with
its reason; stored whole in the turn's commit."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from app.memory import keys
from app.memory.commit import commit
from app.memory.stance import (
    QUANTITIES,
    Stance,
    compute_stance,
    load_stance,
    save_stance,
    save_stance_write,
)
from app.memory.state import BASELINE, CharacterState

T = 1_700_000_000.0


def stance_of(**state: object) -> Stance:
    return compute_stance(CharacterState(**state), turn_id="t1", now=T)  # type: ignore[arg-type]


def test_the_stored_axes_give_all_five_quantities_and_the_cluster():
    stance = stance_of(emotion="freude", arousal=0.8, mode="alltag", space_depth=0.4,
                       space_closeness=0.9)
    assert stance.computed and (stance.turn_id, stance.time) == ("t1", T)
    assert stance.quantities == {"energie": 0.8, "tiefe": 0.4, "naehe": 0.9,
                                 "waerme": pytest.approx(0.85), "tempo": pytest.approx(0.64)}
    assert list(stance.quantities) == list(QUANTITIES)
    assert stance.cluster == "lebhaft"
    assert stance.reason == "tiefe aus raum_tiefe; naehe aus raum_naehe"


def test_missing_axes_are_derived_from_the_register_labels():
    stance = stance_of(emotion="mitgefuehl", arousal=0.4, mode="tiefgang",
                       relationship_dynamic="", tone="herzlich")
    assert stance.computed
    assert (stance.quantities["tiefe"], stance.quantities["naehe"]) == (0.8, 0.75)
    assert stance.quantities["waerme"] == pytest.approx((0.85 + 0.75) / 2)
    assert stance.quantities["tempo"] == pytest.approx(0.4 * 0.6)
    assert stance.cluster == "zugewandt"
    assert stance.reason == "tiefe aus modus=tiefgang; naehe aus tone=herzlich"
    # The relationship dynamic comes before the tone.
    closer = stance_of(mode="alltag", relationship_dynamic="distanz", tone="herzlich")
    assert closer.quantities["naehe"] == 0.2 and "beziehungs_dynamik=distanz" in closer.reason


@pytest.mark.parametrize(("arousal", "dynamic", "mode", "cluster"), [
    (0.9, "naehe", "alltag", "lebhaft"),
    (0.3, "vertrauen", "alltag", "zugewandt"),
    (0.9, "distanz", "alltag", "angespannt"),
    (0.3, "distanz", "spiel", "zurueckhaltend"),
    (0.9, "naehe", "krise", "haltend"),        # a crisis holds, whatever the numbers
])
def test_the_cluster_is_the_region_of_the_space(arousal, dynamic, mode, cluster):
    stance = stance_of(arousal=arousal, relationship_dynamic=dynamic, mode=mode)
    assert stance.computed and stance.cluster == cluster


def test_an_unknown_emotion_leaves_the_warmth_to_the_closeness_and_says_so():
    stance = stance_of(emotion="melancholie", mode="alltag", relationship_dynamic="vertrauen")
    assert stance.computed and stance.quantities["waerme"] == 0.7
    assert "emotion 'melancholie' unbekannt: waerme aus naehe" in stance.reason


@pytest.mark.parametrize(("state", "reason"), [
    ({"mode": "grübelnd", "relationship_dynamic": "naehe"},
     "kein raum: raum_tiefe fehlt, unbekannt: modus='grübelnd'"),
    ({"mode": "alltag"},
     "kein raum: raum_naehe fehlt, unbekannt: beziehungs_dynamik='', tone=''"),
    ({"mode": "", "tone": "kühl"},
     "kein raum: raum_tiefe fehlt, unbekannt: modus=''; "
     "raum_naehe fehlt, unbekannt: beziehungs_dynamik='', tone='kühl'"),
])
def test_without_both_axes_nothing_is_computed_and_the_reason_names_the_gap(state, reason):
    stance = stance_of(**state)
    assert stance == Stance(turn_id="t1", time=T, computed=False, reason=reason)


def test_the_seed_baseline_alone_has_no_closeness():
    assert not compute_stance(BASELINE, turn_id="t0", now=T).computed


async def test_the_commit_write_replaces_the_stored_stance_whole(
        redis_client: aioredis.Redis) -> None:
    computed = stance_of(arousal=0.6, mode="alltag", relationship_dynamic="naehe")
    await commit(redis_client, None, [save_stance_write("local", "nova", computed)])
    stored = await redis_client.hgetall(keys.haltung("local", "nova"))
    assert stored["gerechnet"] == "1" and stored["tiefe"] == "0.3" and stored["turn_id"] == "t1"
    assert await load_stance(redis_client, "local", "nova") == computed

    nothing = compute_stance(CharacterState(mode="?"), turn_id="t2", now=T + 1)
    await commit(redis_client, None, [save_stance_write("local", "nova", nothing)])
    stored = await redis_client.hgetall(keys.haltung("local", "nova"))
    assert stored["gerechnet"] == "0" and stored["turn_id"] == "t2"
    assert not set(QUANTITIES) & set(stored)  # no old quantity lingers
    assert stored["grund"].startswith("kein raum")
    await save_stance(redis_client, "local", "nova", computed)
    assert await load_stance(redis_client, "local", "nova") == computed
