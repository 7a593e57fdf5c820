"""The writing profile's lifecycle against a hand-written table (random trigger sequences)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statemachine.profile import (
    STATES,
    TRIGGERS,
    IllegalProfileTransition,
    build_profile_machine,
)

EXPECTED = {
    ("uninitialized", "propose"): "initial_pending",
    ("uninitialized", "confirm"): "confirmed",
    ("initial_pending", "confirm"): "confirmed",
    ("initial_pending", "abandon"): "uninitialized",
}


@settings(max_examples=200, deadline=None)
@given(triggers=st.lists(st.sampled_from(TRIGGERS + ("explode",)), max_size=12))
def test_random_trigger_sequences_follow_the_hand_written_table(triggers):
    machine = build_profile_machine()
    state = "uninitialized"
    for trigger in triggers:
        want = EXPECTED.get((state, trigger))
        assert machine.can(trigger) is (want is not None)
        if want is None:
            with pytest.raises(IllegalProfileTransition):
                machine.fire(trigger)
        else:
            assert machine.fire(trigger) == want
            state = want
        assert machine.state == state
        assert machine.learns is (state == "confirmed")


def test_confirmed_is_final_and_an_unknown_state_is_refused():
    machine = build_profile_machine("confirmed")
    for trigger in TRIGGERS:
        with pytest.raises(IllegalProfileTransition):
            machine.fire(trigger)
    with pytest.raises(ValueError):
        build_profile_machine("learning")
    assert set(STATES) == {"uninitialized", "initial_pending", "confirmed"}
