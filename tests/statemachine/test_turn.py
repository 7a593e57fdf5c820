"""The turn lifecycle against a hand-written transition table (random trigger sequences)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statemachine import STATES, TRIGGERS, IllegalTransition, build_machine


def expected_next(state: str, trigger: str, origin: str, perceived: bool, attempts: int,
                  max_attempts: int) -> str | None:
    """The lifecycle written out by hand, independent of `TRANSITIONS`: None = illegal."""
    if trigger == "perceive":
        return "path1" if state == "queued" and origin == "user" and not perceived else None
    if trigger == "respond":
        if state == "path1":
            return "path2"
        if state == "queued" and (origin == "character" or perceived):
            return "path2"
        return None
    if trigger == "deliver":
        return "delivered" if state == "path2" else None
    if trigger == "follow_up":
        return "path2" if state == "delivered" else None
    if trigger == "fail":
        return "failed" if state in ("queued", "path1", "path2") else None
    if trigger == "requeue":
        return "queued" if state in ("path1", "path2") and attempts < max_attempts else None
    raise AssertionError(trigger)


@settings(max_examples=300, deadline=None)
@given(
    origin=st.sampled_from(["user", "character"]),
    max_attempts=st.integers(min_value=1, max_value=4),
    triggers=st.lists(st.sampled_from(TRIGGERS + ("explode",)), max_size=25),
)
def test_random_trigger_sequences_follow_the_hand_written_table(origin, max_attempts, triggers):
    machine = build_machine(origin, max_attempts=max_attempts)
    state, perceived, attempts = "queued", False, 1
    for trigger in triggers:
        want = (None if trigger == "explode"
                else expected_next(state, trigger, origin, perceived, attempts, max_attempts))
        if want is None:
            with pytest.raises(IllegalTransition):
                machine.fire(trigger)
        else:
            assert machine.fire(trigger) == want
            if trigger == "respond" and state == "path1":
                perceived = True
            if trigger == "requeue":
                attempts += 1
            state = want
        # An illegal trigger changes nothing.
        assert (machine.state, machine.perceived, machine.attempts) == (state, perceived, attempts)
        assert attempts <= max_attempts


def test_a_character_turn_goes_from_queued_straight_to_path2():
    machine = build_machine("character")
    with pytest.raises(IllegalTransition):
        machine.fire("perceive")
    assert machine.fire("respond") == "path2"
    assert machine.fire("deliver") == "delivered"


def test_a_user_turn_must_be_perceived_before_it_is_answered():
    machine = build_machine("user")
    with pytest.raises(IllegalTransition, match="guard"):
        machine.fire("respond")
    machine.fire("perceive")
    machine.fire("respond")
    assert machine.perceived


def test_a_late_result_for_a_failed_turn_is_illegal():
    machine = build_machine("user")
    machine.fire("perceive")
    machine.fire("fail")
    with pytest.raises(IllegalTransition, match="failed"):
        machine.fire("deliver")
    assert machine.state == "failed"


def test_a_crash_requeue_counts_the_attempt_and_stops_at_the_limit():
    machine = build_machine("user", max_attempts=2)
    machine.fire("perceive")
    machine.fire("respond")
    machine.fire("requeue")
    assert (machine.state, machine.attempts) == ("queued", 2)
    # Already perceived: the retry goes straight to path 2 (the user turn is stored once).
    with pytest.raises(IllegalTransition):
        machine.fire("perceive")
    machine.fire("respond")
    with pytest.raises(IllegalTransition, match="guard"):
        machine.fire("requeue")
    assert machine.fire("fail") == "failed"


def test_a_machine_can_be_rebuilt_in_any_state():
    for state in STATES:
        assert build_machine("user", state=state).state == state
    with pytest.raises(ValueError):
        build_machine("user", state="lost")
    with pytest.raises(ValueError):
        build_machine("robot")  # type: ignore[arg-type]


def test_statemachine_imports_nothing_of_app():
    import ast
    import pathlib

    import statemachine

    for path in pathlib.Path(statemachine.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "app" or n.startswith("app.") for n in names), path
