"""The stage-1 validator (design §8): every code with a failing and a passing case, the time
tokens, and the artifact built from what passed.

An answer is given as the JSON the model sends and read as the gateway reads it (the schema's
struct), with where it holds a key that reading drops (`unknown_key`)."""

from __future__ import annotations

import copy
import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.journal import times
from app.journal.artifact import Line, fallback_artifact, local_draft
from app.journal.day import Conversation, DayMessage, number_sources
from app.journal.schema import Reconstruction, unknown_key
from app.journal.stages import check
from app.journal.validator import CODES, validate


def day(*lines: tuple[str, str]) -> list:
    messages = [DayMessage(f"m{i}", role, text, None) for i, (role, text) in enumerate(lines)]
    return number_sources([Conversation("c1", "import", None, messages)])


SOURCES = day(
    ("assistant", "Guten Morgen! Wie hast du geschlafen?"),
    ("user", "Um 6:00 Uhr bin ich aufgestanden,  müde."),
    ("user", "Zum Frühstück gab es Brot mit Anna."),
    ("assistant", "Klingt schön. Und am Abend?"),
    ("user", "Gegen 9 habe ich gelesen. Vielleicht war es auch später."),
)


def valid_json() -> dict:
    return {
        "source_order": ["u1", "u2", "u3"],
        "chronology": [
            {"source_id": "u1", "source": "user", "time": "6:00 Uhr",
             "claims": [{"kind": "event", "evidence": "bin ich aufgestanden, müde"}]},
            {"source_id": "u2", "source": "user", "time": None,
             "claims": [{"kind": "event", "evidence": "Brot mit Anna"}]},
            {"source_id": "u3", "source": "user", "time": "Gegen 9",
             "claims": [{"kind": "event", "evidence": "habe ich gelesen"}]},
        ],
        "uncertainties": [{"source_id": "u3", "evidence": "Vielleicht war es auch später."}],
        "contradictions": [], "plan_changes": [], "corrections": [],
    }


def with_change(change) -> dict:
    data = valid_json()
    change(data)
    return data


def read(data: dict) -> Reconstruction:
    return msgspec.json.decode(json.dumps(data), type=Reconstruction)


def codes_of(sources, data: dict) -> list[str]:
    text = json.dumps(data)
    return validate(sources, read(data), unknown_key(text))


def test_numbering_takes_the_assistant_line_before_a_user_line_as_context():
    assert [(s.source_id, s.role) for s in SOURCES] == [
        ("a1", "assistant"), ("u1", "user"), ("u2", "user"), ("a2", "assistant"), ("u3", "user")]


def test_a_valid_reconstruction_has_no_codes():
    assert codes_of(SOURCES, valid_json()) == []


# --- one failing case per code; each is the valid JSON with one change ------------------------

FAILING = {
    "coverage_incomplete": [
        lambda d: d["source_order"].remove("u3") or d["chronology"].pop(),
        lambda d: d["chronology"].pop(1),  # u2 only in source_order
    ],
    "order_changed": [lambda d: d.update(source_order=["u2", "u1", "u3"])],
    "unknown_source": [lambda d: d["uncertainties"].append({"source_id": "u9",
                                                           "evidence": "x"})],
    "assistant_source": [
        lambda d: d["chronology"][1].update(source="assistant"),
        lambda d: d["chronology"][1].update(source="User"),  # exactly `user`, nothing else
        lambda d: d["corrections"].append({"source_id": "a1", "evidence": "Guten Morgen!"}),
    ],
    "evidence_not_verbatim": [
        lambda d: d["chronology"][1]["claims"][0].update(evidence="brot mit Anna"),  # case
        lambda d: d["chronology"][1]["claims"][0].update(evidence="Brot mit Anna!"),
        lambda d: d["chronology"][0]["claims"][0].update(evidence="bin ich aufgestanden müde"),
        lambda d: d["chronology"][1]["claims"][0].update(evidence="Wie hast du geschlafen"),
        lambda d: d["chronology"][1]["claims"][0].update(evidence="   "),
        lambda d: d["uncertainties"][0].update(evidence="Vielleicht später."),
    ],
    "time_not_pure": [
        lambda d: d["chronology"][0].update(time="um 6:00 Uhr morgens"),
        lambda d: d["chronology"][0].update(time="morgens"),
        lambda d: d["chronology"][0].update(time="25:00"),
    ],
    "time_source_mismatch": [
        lambda d: d["chronology"][1].update(time="6:00 Uhr"),  # another line's time
        lambda d: d["chronology"][2].update(time="gegen 9"),  # the line says "Gegen 9"
    ],
    "reorder_unjustified": [
        # u3 before u2: u2 has no time at all
        lambda d: d.update(chronology=[d["chronology"][0], d["chronology"][2],
                                       d["chronology"][1]]),
    ],
    "legacy_field": [
        lambda d: d.update(events=[]),
        lambda d: d["chronology"][0].update(evidence="bin ich aufgestanden"),
        lambda d: d["chronology"][0]["claims"][0].update(confidence=0.9),
        lambda d: d["uncertainties"][0].update(kind="doubt"),
    ],
}


@pytest.mark.parametrize("code", CODES)
def test_every_code_has_failing_cases(code):
    assert code in FAILING, f"no failing case for {code}"
    for change in FAILING[code]:
        data = with_change(change)
        assert code in codes_of(SOURCES, data), (code, data)


def test_a_time_without_its_uhr_still_stands_in_its_line():
    # "6:00" stands in "Um 6:00 Uhr" as a token of its own (the `Uhr` is optional).
    assert codes_of(SOURCES, with_change(lambda d: d["chronology"][0].update(time="6:00"))) == []


PASSING = {
    "coverage_incomplete": lambda d: None,
    "order_changed": lambda d: None,
    "unknown_source": lambda d: d["corrections"].append({"source_id": "u2",
                                                        "evidence": "Frühstück"}),
    "assistant_source": lambda d: d["chronology"][1].update(source="user"),
    # NFKC and whitespace only: a doubled space in the line, a full-width colon in evidence
    "evidence_not_verbatim": lambda d: d["chronology"][0]["claims"][0].update(
        evidence="Um 6\uff1a00 Uhr bin ich\naufgestanden, müde."),
    "time_not_pure": lambda d: d["chronology"][0].update(time="6:00 Uhr"),
    "time_source_mismatch": lambda d: d["chronology"][2].update(time="Gegen 9"),
    "reorder_unjustified": lambda d: None,
    "legacy_field": lambda d: None,
}


@pytest.mark.parametrize("code", CODES)
def test_every_code_has_a_passing_case(code):
    assert codes_of(SOURCES, with_change(PASSING[code])) == []


TIMED = day(
    ("user", "Abends um 20:15 Kino."),
    ("user", "Morgens um halb acht gejoggt."),
    ("user", "Mittags gegen 12 gegessen."),
    ("user", "Um viertel nach zehn im Büro."),
)


def chronology(order, times_by_id):
    return {"source_order": ["u1", "u2", "u3", "u4"],
            "chronology": [{"source_id": sid, "source": "user", "time": times_by_id.get(sid),
                            "claims": []} for sid in order]}


def test_a_reorder_is_justified_by_source_local_times_that_ascend():
    data = chronology(["u2", "u4", "u3", "u1"], {"u1": "20:15", "u2": "halb acht",
                                                 "u3": "gegen 12", "u4": "viertel nach zehn"})
    codes, artifact = check(TIMED, read(data), json.dumps(data), fallback_artifact(TIMED))
    assert codes == []
    assert [line.source_id for line in artifact.sources] == ["u2", "u4", "u3", "u1"]
    assert artifact.sources[0] == Line("u2", "Morgens um halb acht gejoggt.", "halb acht")


# A day as a person tells it: a few lines with times, most without.
MIXED = day(
    ("user", "Abends um 20:15 Kino mit Tom."),      # u1 20:15
    ("user", "Der Film war lang."),                 # u2 untimed
    ("user", "Morgens um halb acht gejoggt."),      # u3 7:30
    ("user", "Um 9 Uhr Zeitung gelesen."),          # u4 9:00
    ("user", "Danach Kaffee."),                     # u5 untimed, relative
    ("user", "Um 9 Uhr auch Mails gelesen."),       # u6 9:00
)
MIXED_TIMES = {"u1": "20:15", "u3": "halb acht", "u4": "9 Uhr", "u6": "9 Uhr"}


def mixed(order: str, timed: str = "u1 u3 u4 u6") -> dict:
    ids = order.split()
    return {"source_order": [f"u{i}" for i in range(1, 7)],
            "chronology": [{"source_id": sid, "source": "user",
                            "time": MIXED_TIMES[sid] if sid in timed.split() else None,
                            "claims": []} for sid in ids]}


@pytest.mark.parametrize("order,timed,justified", [
    ("u1 u2 u3 u4 u5 u6", "", True),                      # source order needs no time
    ("u1 u2 u3 u4 u5 u6", "u1 u3 u4 u6", True),           # times that fall, never used
    ("u3 u1 u2 u4 u5 u6", "u1 u3 u4 u6", False),          # u3 jumps the untimed u2
    ("u1 u3 u2 u4 u5 u6", "u1 u3 u4 u6", False),          # a swap across an untimed line
    ("u2 u1 u3 u4 u5 u6", "u1 u3 u4 u6", False),          # an untimed line moved
    ("u1 u2 u4 u3 u5 u6", "u1 u3 u4 u6", False),          # minutes going backwards
    ("u1 u2 u3 u4 u6 u5", "u1 u3 u4 u6", False),          # u5 ("danach") is relative
    ("u1 u2 u3 u6 u5 u4", "u1 u3 u4 u6", False),          # equal times keep source order
    ("u1 u2 u3 u4 u5 u6", "u3", True),                    # one timed line alone, in place
    ("u3 u2 u1 u4 u5 u6", "u1 u3 u4 u6", False),          # u2 between, untimed
    ("u1 u2 u3 u4 u5 u6", "u1 u4", True),                 # a subset timed, no reorder
])
def test_the_chronology_table(order, timed, justified):
    codes = codes_of(MIXED, mixed(order, timed))
    assert ("reorder_unjustified" in codes) is (not justified), codes


def test_two_timed_lines_swap_while_the_untimed_ones_stay():
    # The day: a correct reorder of two timed lines, the rest without times.
    lines = day(("user", "Abends um 20:15 Kino."), ("user", "Morgens um halb acht gejoggt."),
                ("user", "Der Tag war warm."), ("user", "Ich habe viel gelesen."))
    data = {"source_order": ["u1", "u2", "u3", "u4"], "chronology": [
        {"source_id": "u2", "source": "user", "time": "halb acht", "claims": []},
        {"source_id": "u1", "source": "user", "time": "20:15", "claims": []},
        {"source_id": "u3", "source": "user", "time": None, "claims": []},
        {"source_id": "u4", "source": "user", "time": None, "claims": []}]}
    codes, artifact = check(lines, read(data), json.dumps(data), fallback_artifact(lines))
    assert codes == [] and artifact.reconstruction_status == "valid"
    assert [line.source_id for line in artifact.sources] == ["u2", "u1", "u3", "u4"]


def test_a_time_that_is_not_its_lines_own_justifies_nothing():
    # u3 claims 6:00, which its line does not say: the time is not confirmed, so u3 counts as
    # untimed for the reorder (and the mismatch is its own code).
    data = mixed("u1 u2 u4 u5 u6 u3", "u1 u4 u6")
    data["chronology"][5]["time"] = "23:00"
    assert codes_of(MIXED, data) == ["time_source_mismatch", "reorder_unjustified"]


@pytest.mark.parametrize("order,justified", [
    (["u2", "u4", "u3", "u1"], False),  # u3 (gegen 12) has no time here
])
def test_a_reorder_past_a_line_without_its_time_is_unjustified(order, justified):
    data = chronology(order, {"u1": "20:15", "u2": "halb acht", "u4": "viertel nach zehn"})
    assert ("reorder_unjustified" in codes_of(TIMED, data)) is (not justified)


def test_equal_times_keep_the_source_order():
    lines = day(("user", "Um 9 Uhr Kaffee."), ("user", "Um 9 Uhr Zeitung."))
    swapped = {"source_order": ["u1", "u2"], "chronology": [
        {"source_id": "u2", "source": "user", "time": "9 Uhr", "claims": []},
        {"source_id": "u1", "source": "user", "time": "9 Uhr", "claims": []}]}
    assert codes_of(lines, swapped) == ["reorder_unjustified"]


# --- the rule over random days: an oracle by pairs, written from the rule's words -------------

def justified_by_pairs(order: list[str], minutes: dict[str, int | None]) -> bool:
    """Seed 004 §16.1 read pair by pair: each pair of entries the chronology `order` puts
    out of source order (`u<n>` numbers the source order) must both have a confirmed time,
    the first placed with fewer minutes."""
    rank = {sid: int(sid[1:]) for sid in order}
    for i, first in enumerate(order):
        for second in order[i + 1:]:
            if rank[first] > rank[second]:
                a, b = minutes[first], minutes[second]
                if a is None or b is None or a >= b:
                    return False
    return True


@st.composite
def random_day(draw):
    """Lines with a clock time or none, each time given in the chronology or left out, and
    the chronology: a random permutation, or one sorted by time within each run of timed
    lines (a reorder the rule allows), or that with one neighbouring pair swapped (mostly a
    near miss)."""
    size = draw(st.integers(1, 9))
    clock = st.tuples(st.integers(0, 23), st.sampled_from([0, 15, 30, 45]))
    clocks = draw(st.lists(st.one_of(st.none(), clock, clock, clock), min_size=size,
                           max_size=size))  # mostly timed: runs of timed lines to reorder
    given_ = draw(st.lists(st.sampled_from([True, True, True, False]), min_size=size,
                           max_size=size))
    lines = [("user", f"Um {c[0]}:{c[1]:02d} Uhr Punkt {n}." if c else f"Punkt {n}, ohne Zeit.")
             for n, c in enumerate(clocks)]
    timed = [bool(clocks[n] and given_[n]) for n in range(size)]
    mode = draw(st.sampled_from(["permutation", "sorted runs", "sorted runs, one swap"]))
    if mode == "permutation":
        order = list(draw(st.permutations(range(size))))
    else:
        order, run = [], []
        for n in [*range(size), None]:
            if n is not None and timed[n]:
                run.append(n)
                continue
            order += sorted(run, key=lambda m: (clocks[m], m))  # ties keep source order
            run = []
            if n is not None:
                order.append(n)
        if mode.endswith("swap") and size > 1:
            k = draw(st.integers(0, size - 2))
            order[k], order[k + 1] = order[k + 1], order[k]
    return lines, clocks, [f"u{n + 1}" for n in order], given_


@settings(max_examples=400, deadline=None)
@given(random_day())
def test_a_reorder_is_accepted_iff_the_pairs_justify_it(case):
    lines, clocks, order, given = case
    sources = day(*lines)
    chronology_items, minutes = [], {}
    for sid in order:
        n = int(sid[1:]) - 1
        token = f"{clocks[n][0]}:{clocks[n][1]:02d}" if clocks[n] and given[n] else None
        minutes[sid] = clocks[n][0] * 60 + clocks[n][1] if token else None
        chronology_items.append({"source_id": sid, "source": "user", "time": token,
                                 "claims": []})
    data = {"source_order": [f"u{n}" for n in range(1, len(lines) + 1)],
            "chronology": chronology_items}
    codes = codes_of(sources, data)
    assert ("reorder_unjustified" not in codes) is justified_by_pairs(order, minutes), codes
    assert set(codes) <= {"reorder_unjustified"}


@pytest.mark.parametrize("token,minutes", [
    ("6:00", 360), ("06:00", 360), ("6:00 Uhr", 360), ("6.30 Uhr", 390), ("9 Uhr", 540),
    ("halb acht", 450), ("viertel nach zehn", 615), ("viertel vor zehn", 585),
    ("dreiviertel acht", 465), ("gegen 9", 540), ("gegen neun Uhr", 540), ("Gegen 9", None),
    ("7:30 pm", 1170), ("halb eins", 30),
])
def test_time_tokens(token, minutes):
    if token == "Gegen 9":  # a capitalised spoken time is read as the same token
        minutes = 540
    assert times.parse(token) == minutes


@pytest.mark.parametrize("token", ["morgens", "um 6", "6", "später", "25:00", "halb", "",
                                   "6:00 Uhr morgens", "nach dem Essen"])
def test_not_time_tokens(token):
    assert times.parse(token) is None


def test_a_spoken_time_occurs_only_as_a_token_of_its_own_line():
    assert times.occurs_in("halb acht", "Ich bin um halb acht los.")
    assert not times.occurs_in("halb acht", "Ich bin um halb achtzehn los.")
    assert not times.occurs_in("6:00", "Es war 16:00.")
    assert times.find("Um viertel nach zehn und gegen 12 Uhr") == ["viertel nach zehn",
                                                                   "gegen 12 Uhr"]


def test_the_validator_does_not_change_its_input():
    answer = read(valid_json())
    frozen = copy.deepcopy(answer)
    validate(SOURCES, answer)
    assert answer == frozen


def test_an_answer_of_another_shape_never_reaches_the_validator():
    # The schema's decoding refuses it (the gateway's repair retry, then `model_bad_output`
    # and the fallback: test_api); what it accepts, the validator checks.
    for junk in (None, [], "x", 3, {"chronology": "x"}, {"chronology": [1, None]},
                 {"source_order": [1, 2]}, {"chronology": [{"source_id": ["u1"]}]},
                 {"chronology": [{"source_id": "u1"}]}, {"corrections": None}):
        with pytest.raises(msgspec.ValidationError):
            read(junk)


def test_an_unknown_key_is_found_at_any_level_with_its_place():
    for change, where in [
            (lambda d: d.update(events=[]), "`events`"),
            (lambda d: d["chronology"][2].update(evidence="x"),
             "`evidence` - at `$.chronology[2]`"),
            (lambda d: d["chronology"][0]["claims"][0].update(confidence=0.9),
             "`confidence` - at `$.chronology[0].claims[0]`"),
            (lambda d: d["uncertainties"][0].update(kind="doubt"),
             "`kind` - at `$.uncertainties[0]`")]:
        found = unknown_key(json.dumps(with_change(change)))
        assert found is not None and found.endswith(where), (found, where)
    fenced = "```json\n" + json.dumps(with_change(lambda d: d.update(events=[]))) + "\n```"
    assert unknown_key(fenced).endswith("`events`")  # the fence is the envelope, not a key
    assert unknown_key(json.dumps(valid_json())) is None
    assert unknown_key("not json") is None


# --- the artifact ---------------------------------------------------------------------------------

def test_the_artifact_rehydrates_full_lines_and_drops_labels_and_assistant_text():
    data = valid_json()
    codes, artifact = check(SOURCES, read(data), json.dumps(data), fallback_artifact(SOURCES))
    assert codes == [] and artifact.reconstruction_status == "valid"
    assert [line.text for line in artifact.sources] == [
        "Um 6:00 Uhr bin ich aufgestanden,  müde.", "Zum Frühstück gab es Brot mit Anna.",
        "Gegen 9 habe ich gelesen. Vielleicht war es auch später."]
    sent = json.loads(msgspec.json.encode(artifact))
    assert sent["kind"] == "verified_artifact"
    assert sent["sources"][0]["time"] == "6:00 Uhr"
    assert "time" not in sent["sources"][1]
    assert sent["uncertainties"] == [{"source_id": "u3",
                                      "evidence": "Vielleicht war es auch später."}]
    flat = json.dumps(sent, ensure_ascii=False)
    assert "event" not in flat and "Guten Morgen" not in flat and "Klingt schön" not in flat


def test_an_invalid_reconstruction_gives_the_fallback_in_source_order():
    data = with_change(lambda d: d.update(chronology=list(reversed(d["chronology"])),
                                          source_order=["u3", "u2", "u1"]))
    fallback = fallback_artifact(SOURCES)
    codes, artifact = check(SOURCES, read(data), json.dumps(data), fallback)
    assert codes and artifact is fallback and artifact.reconstruction_status == "fallback"
    assert [line.source_id for line in artifact.sources] == ["u1", "u2", "u3"]
    assert all(line.time is None for line in artifact.sources)
    assert artifact.uncertainties == [] and artifact.corrections == []


def test_the_local_draft_lists_every_line_whole_under_the_date():
    text = local_draft("2026-03-01", fallback_artifact(SOURCES))
    assert text.splitlines()[0] == "2026-03-01"
    for source in SOURCES:
        assert (source.text in text) == (source.role == "user")
