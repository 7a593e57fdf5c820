"""The one history renderer: grouping, labels, window, budget, count check (seed 000 §3.7–3.8)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from app.core.settings import Settings, defaults
from app.memory.render import (
    build_history,
    group_turns,
    label_texts,
    render_history,
    select_window,
    speaker_label,
)
from app.memory.turns import Turn

SETTINGS = defaults()
KINDS = ("user", "reply", "continue", "impulse", "unknown")


def make(kind: str, content: str, *, emotion: str = "", done: bool | None = None,
         ok: bool | None = None, turn_id: str = "t") -> Turn:
    role = "user" if kind == "user" else "assistant"
    origin = {"user": "", "reply": "antwort", "continue": "fortsetzung",
              "impulse": "eigener_impuls", "unknown": ""}[kind]
    return Turn(turn_id, role, content, 1.0, occasion=origin, emotion=emotion,
                action_done=done, action_succeeded=ok)


# The seed's label table, written out independently of the code under test.
EXPECTED_DE = {"user": "USER", "reply": "NOVA", "continue": "NOVA",
               "impulse": "NOVA (von sich aus)", "unknown": "NOVA (Anlass unbekannt)"}
EXPECTED_EN = {"user": "USER", "reply": "NOVA", "continue": "NOVA",
               "impulse": "NOVA (on their own)", "unknown": "NOVA (occasion unknown)"}


def kind_of(turn: Turn) -> str:
    if turn.role == "user":
        return "user"
    return {"antwort": "reply", "fortsetzung": "continue", "eigener_impuls": "impulse",
            "": "unknown"}[turn.occasion]


# --- labels ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_speaker_labels_follow_the_german_table(kind: str) -> None:
    assert speaker_label(make(kind, "x"), "Nova", "de") == EXPECTED_DE[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_speaker_labels_follow_the_english_table(kind: str) -> None:
    assert speaker_label(make(kind, "x"), "Nova", "en") == EXPECTED_EN[kind]


def test_the_characters_name_upper_cased_stands_for_nova() -> None:
    assert speaker_label(make("impulse", "x"), "Lumi Sol", "de-DE") == "LUMI SOL (von sich aus)"
    assert speaker_label(make("user", "x"), "Lumi", "de") == "USER"


def test_a_language_without_a_table_gets_english_labels() -> None:
    assert speaker_label(make("unknown", "x"), "Nova", "fr") == "NOVA (occasion unknown)"
    assert "FEHLGESCHLAGEN" in label_texts("Nova", "de_AT")


# --- the rendered block ------------------------------------------------------------------------

def test_rendered_block_numbers_groups_and_puts_marker_and_occasion_in_the_bracket() -> None:
    turns = [
        make("user", "Lösch die Einkaufsliste", emotion="neutral", done=True, ok=True),
        make("reply", "Erledigt!", emotion="freude"),
        make("impulse", "Magst du morgen weiterplanen?"),
        make("user", "Trag Milch ein", emotion="neutral", done=True, ok=False),
        make("unknown", "Das ging schief."),
    ]
    assert render_history(turns, SETTINGS) == (
        "[1] USER (neutral, ERLEDIGT): Lösch die Einkaufsliste\n"
        "[1] NOVA (freude): Erledigt!\n"
        "[2] NOVA (von sich aus): Magst du morgen weiterplanen?\n"
        "[3] USER (neutral, FEHLGESCHLAGEN): Trag Milch ein\n"
        "[3] NOVA (Anlass unbekannt): Das ging schief."
    )


def test_english_markers() -> None:
    turns = [make("user", "delete it", done=True, ok=True), make("reply", "done")]
    text = render_history(turns, SETTINGS, language="en", character_name="Nova")
    assert text == "[1] USER (DONE): delete it\n[1] NOVA: done"


def test_an_action_not_done_carries_no_marker() -> None:
    text = render_history([make("user", "Welche Liste?", done=False, ok=False)], SETTINGS)
    assert text == "[1] USER: Welche Liste?"


def test_multiline_contributions_are_kept_whole() -> None:
    turns = [make("user", "erste\nzweite\ndritte"), make("reply", "a\n\nb")]
    assert render_history(turns, SETTINGS) == "[1] USER: erste\nzweite\ndritte\n[1] NOVA: a\n\nb"


def test_turns_without_content_are_not_contributions() -> None:
    turns = [make("user", "  "), make("reply", ""), make("user", "hallo")]
    assert render_history(turns, SETTINGS) == "[1] USER: hallo"
    assert render_history([], SETTINGS) == ""


# --- grouping ----------------------------------------------------------------------------------

def test_an_impulse_opens_its_own_group_and_a_user_turn_opens_the_next() -> None:
    turns = [make("user", "u1"), make("reply", "r1"), make("impulse", "i1"),
             make("continue", "c1"), make("impulse", "i2"), make("user", "u2"),
             make("user", "u3"), make("reply", "r3")]
    groups = group_turns(turns)
    assert [[t.content for t in g] for g in groups] == [
        ["u1", "r1"], ["i1", "c1"], ["i2"], ["u2"], ["u3", "r3"]]


def test_a_character_turn_first_in_the_list_opens_a_group() -> None:
    assert [[t.content for t in g] for g in group_turns([make("reply", "r"), make("user", "u")])] \
        == [["r"], ["u"]]


def test_count_check_logs_an_error_when_contributions_go_missing(
        caplog: pytest.LogCaptureFixture) -> None:
    from app.memory import render

    turns = [make("user", "u1"), make("reply", "r1")]
    with caplog.at_level(logging.ERROR):
        render._check_count(turns, [[turns[0]]])  # a grouping that skipped a turn
    assert [r.msg for r in caplog.records] == ["history grouping lost contributions"]
    assert caplog.records[0].fields == {"contributions": 1, "turns_with_content": 2}


# --- window ------------------------------------------------------------------------------------

def contents(groups: list[list[Turn]]) -> list[list[str]]:
    return [[t.content for t in g] for g in groups]


def test_window_counts_exchanges_and_keeps_impulses_between_and_after() -> None:
    turns = [make("user", "u1"), make("reply", "r1"), make("impulse", "i1"),
             make("user", "u2"), make("reply", "r2"), make("impulse", "i2"),
             make("impulse", "i3"), make("user", "u3"), make("impulse", "i4")]
    groups = group_turns(turns)
    assert contents(select_window(groups, 2)) == [["u2", "r2"], ["i2"], ["i3"], ["u3"], ["i4"]]
    assert contents(select_window(groups, 1)) == [["u3"], ["i4"]]
    assert select_window(groups, 3) == groups and select_window(groups, 99) == groups


def test_five_impulses_do_not_push_the_user_out_of_a_window_of_five() -> None:
    turns = [make("user", f"u{i}") for i in range(5)] + [make("impulse", f"i{i}") for i in range(5)]
    window = select_window(group_turns(turns), 5)
    assert sum(1 for g in window if g[0].role == "user") == 5


def test_window_size_comes_from_settings_unless_given() -> None:
    turns = [make("user", f"u{i}") for i in range(12)]
    assert build_history(turns, SETTINGS).groups == SETTINGS.session_window_exchanges
    assert build_history(turns, SETTINGS, exchanges=3).text.startswith("[1] USER: u9\n")
    assert build_history(turns, SETTINGS, exchanges=3).dropped_by_window == 9
    with pytest.raises(ValueError):
        select_window(group_turns(turns), 0)


# --- budget ------------------------------------------------------------------------------------

def test_budget_drops_whole_oldest_groups_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    turns = [make("user", "a" * 3000), make("reply", "b" * 3000),
             make("user", "c" * 3000), make("reply", "d" * 1000)]
    with caplog.at_level(logging.WARNING):
        history = build_history(turns, SETTINGS)
    assert history.text == f"[1] USER: {'c' * 3000}\n[1] NOVA: {'d' * 1000}"
    assert history.dropped_by_budget == 1 and history.contributions == 2
    warning = next(r for r in caplog.records if r.levelno == logging.WARNING)
    assert warning.fields["limit"] == "session_history_budget_chars"
    assert warning.fields["dropped_groups"] == 1


def test_newest_group_stays_whole_even_alone_over_budget(caplog: pytest.LogCaptureFixture) -> None:
    turns = [make("user", "alt"), make("user", "x" * 9000), make("reply", "y" * 500)]
    with caplog.at_level(logging.WARNING):
        history = build_history(turns, SETTINGS)
    assert history.text == f"[1] USER: {'x' * 9000}\n[1] NOVA: {'y' * 500}"
    assert any("exceeded by the newest group alone" in r.msg for r in caplog.records)


def test_budget_is_measured_on_the_exact_rendered_text() -> None:
    turns = [make("user", "u" * 40), make("reply", "r" * 40)]
    exact = len(render_history(turns, SETTINGS))
    assert build_history(turns, SETTINGS, budget_chars=exact).dropped_by_budget == 0
    turns.append(make("user", "neu"))
    assert build_history(turns, SETTINGS,
                         budget_chars=len(render_history(turns, SETTINGS)) - 1).text \
        == "[1] USER: neu"


def test_budget_counts_two_digit_group_numbers() -> None:
    turns = [make("user", f"frage {i}") for i in range(12)]
    exact = len(render_history(turns, SETTINGS, exchanges=12, budget_chars=10**6))
    assert build_history(turns, SETTINGS, exchanges=12, budget_chars=exact).groups == 12
    assert build_history(turns, SETTINGS, exchanges=12, budget_chars=exact - 1).groups == 11


def test_a_history_within_budget_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        render_history([make("user", "hallo"), make("reply", "hi")], SETTINGS)
    assert caplog.records == []


def test_whole_shows_everything_without_window_or_budget() -> None:
    turns = [make("user", "z" * 5000) for _ in range(15)]
    history = build_history(turns, SETTINGS, whole=True)
    assert history.groups == 15 and history.dropped_by_budget == history.dropped_by_window == 0
    assert len(history.text) > SETTINGS.session_history_budget_chars


# --- properties over random turn sequences -----------------------------------------------------

turn_kinds = st.sampled_from(KINDS)
texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
                min_size=0, max_size=400)


@st.composite
def turn_sequences(draw: st.DrawFn, max_size: int = 40) -> list[Turn]:
    kinds = draw(st.lists(turn_kinds, max_size=max_size))
    turns = []
    for index, kind in enumerate(kinds):
        body = draw(texts)
        empty = draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans())
        # A unique head makes each contribution findable in the rendered text.
        content = "" if empty else f"<{index}>{body}"
        turns.append(make(kind, content, turn_id=str(index),
                          emotion=draw(st.sampled_from(["", "neutral", "freude"]))))
    return turns


@st.composite
def render_params(draw: st.DrawFn) -> tuple[int, int]:
    return draw(st.integers(1, 6)), draw(st.integers(100, 6000))


PROPERTY = hsettings(max_examples=120, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def expected_line(turn: Turn) -> str:
    """`LABEL (details): content` built from the table above, not from the renderer."""
    label = EXPECTED_DE[kind_of(turn)]
    name, _, occasion = label.partition(" (")
    details = [d for d in (turn.emotion, occasion.rstrip(")")) if d]
    return f"{name} ({', '.join(details)}): {turn.content}" if details else f"{name}: {turn.content}"


@PROPERTY
@given(turn_sequences(), render_params())
def test_every_shown_contribution_is_whole_and_labelled_by_its_fields(
        turns: list[Turn], params: tuple[int, int]) -> None:
    exchanges, budget = params
    history = build_history(turns, SETTINGS, exchanges=exchanges, budget_chars=budget)
    window = select_window(group_turns(turns), exchanges) if turns else []
    shown = window[len(window) - history.groups:] if history.groups else []
    expected = "\n".join(f"[{n}] {expected_line(t)}" for n, g in enumerate(shown, 1) for t in g)
    assert history.text == expected
    # Whole groups only: exactly the newest `groups` of the window, nothing in between.
    assert history.dropped_by_budget + history.groups == len(window)
    # Only as many as needed: one more group would not have fit.
    if history.dropped_by_budget:
        wider = window[len(window) - history.groups - 1:]
        assert len("\n".join(f"[{n}] {expected_line(t)}"
                             for n, g in enumerate(wider, 1) for t in g)) > budget


@PROPERTY
@given(turn_sequences(), render_params())
def test_the_newest_group_is_always_there(turns: list[Turn], params: tuple[int, int]) -> None:
    exchanges, budget = params
    history = build_history(turns, SETTINGS, exchanges=exchanges, budget_chars=budget)
    groups = group_turns(turns)
    if not groups:
        assert history.text == ""
        return
    for turn in groups[-1]:
        assert f": {turn.content}" in history.text
    assert history.groups >= 1
    if history.groups > 1:
        assert len(history.text) <= budget


@PROPERTY
@given(turn_sequences(), st.lists(st.tuples(st.integers(0, 40), texts), max_size=8),
       st.integers(1, 6))
def test_adding_impulses_never_lowers_the_user_exchanges_in_a_window(
        turns: list[Turn], impulses: list[tuple[int, str]], exchanges: int) -> None:
    with_impulses = list(turns)
    for position, text in impulses:
        with_impulses.insert(min(position, len(with_impulses)), make("impulse", f"!{text}"))

    def users_in_window(sequence: list[Turn]) -> int:
        groups = group_turns(sequence)
        window = select_window(groups, exchanges) if groups else []
        return sum(1 for g in window for t in g if t.role == "user")

    assert users_in_window(with_impulses) >= users_in_window(turns)


@PROPERTY
@given(turn_sequences(max_size=12), st.randoms(use_true_random=False))
def test_labels_follow_the_fields_never_the_position(turns: list[Turn], rnd) -> None:
    shuffled = list(turns)
    rnd.shuffle(shuffled)
    text = render_history(shuffled, SETTINGS, whole=True)
    for turn in shuffled:
        if turn.has_content:
            assert f"] {expected_line(turn)}" in text


@PROPERTY
@given(turn_sequences())
def test_count_check_holds(turns: list[Turn]) -> None:
    records: list[logging.LogRecord] = []
    handler = _Collect(records.append)
    logger = logging.getLogger("app.memory.render")
    logger.addHandler(handler)
    try:
        groups = group_turns(turns)
    finally:
        logger.removeHandler(handler)
    assert sum(len(g) for g in groups) == sum(1 for t in turns if t.has_content)
    assert [r for r in records if r.levelno >= logging.ERROR] == []
    history = build_history(turns, SETTINGS, whole=True)
    assert history.contributions == sum(1 for t in turns if t.has_content)


class _Collect(logging.Handler):
    def __init__(self, sink: Callable[[logging.LogRecord], None]) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink(record)


def test_settings_fixture_budget_default_is_the_seeds_8000(settings: Settings) -> None:
    assert settings.session_history_budget_chars == 8000
