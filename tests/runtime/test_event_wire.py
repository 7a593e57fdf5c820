"""Event payloads on the wire (seed 001 §3.1, design §5): the typed payloads write the bytes
the dict payloads wrote before them (`tests/golden.py`: recorded from the old code), every
event a user's Redis already holds still reads, and a stored value that does not fit its
field is dropped and reported, never the event."""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from app.api.app_keys import REDIS
from app.core.emotion import Emotion, copy_emotion
from app.memory import keys
from app.memory.lists import ListStore
from app.pipeline import dispatcher
from app.pipeline.agents.follow_up import follow_up, read_context
from app.pipeline.schemas import ListCommand, PlanStep, ReminderCommand
from app.pipeline.state import AgentContext, Path2State
from app.pipeline.stimulus import follow_up_request, retry_request
from app.pipeline.vocabulary import (
    AwaitingPayload,
    AwaitUser,
    Continue,
    ContinuePayload,
    ImpulsePayload,
    UserPayload,
)
from app.runtime import events as ev
from app.runtime.wire import decode_event, encode
from tests.golden import golden, golden_names
from tests.pipeline_support import fake_app, last_user_message, open_chat, purposes

NOW = 1713700000.25
EVENT_KINDS = ("user_event", "impulse_event", "continue_", "awaiting_")


@pytest.fixture
def fixed_ids() -> Iterator[None]:
    """Event and turn ids id1, id2, … and one creation time, as the golden bytes were made."""
    ids = (f"id{i}" for i in itertools.count(1))
    with mock.patch.object(ev, "new_id", lambda: next(ids)), \
            mock.patch.object(ev.time, "time", lambda: NOW):
        yield


def the_user() -> Emotion:
    # What path 1's EI calc makes of the golden perception (labels in lower case).
    return Emotion(emotion="trauer", arousal=0.8, emotions_vector="schwer", mode="tiefgang",
                   language_style="knapp", relationship_dynamic="nähe", tone="leise",
                   intent="frage", prompt_topic="Job")


def asked(agent: str, task: str, command: msgspec.Struct, question: str,
          remaining: list[PlanStep], pending: AgentContext | None = None,
          **extra: Any) -> dict[str, Any]:
    """An agent's question as the dispatcher hands it to the runtime: the agent's own
    `follow_up`, the planner's remaining steps, the dispatcher's follow-up."""
    state = Path2State(turn_id="t1", user_id="meister", character_id="nova",
                       message_ids=["m1"], origin="reply", source="user", trigger_count=0,
                       payload=UserPayload())
    result = follow_up(agent, state, task, command, pending, question, **extra)
    assert result.context is not None
    result.context.remaining = remaining
    state.results = [result]
    follow = dispatcher.follow_up(state)
    assert isinstance(follow, AwaitUser)
    return follow.agent_context


def test_every_payload_kind_is_written_byte_for_byte_as_before(fixed_ids):
    # The same producers, in the same order, as the old code's golden run.
    user = ev.user_event("meister", "nova", "t1", ["m1", "m2"],
                         "Ich hab heute\nden Job verloren", the_user(), "de")
    assert encode(user) == golden("user_event")
    assert encode(ev.user_event("meister", "nova", "t0", ["m0"], "Hallo", Emotion(), "")) == \
        golden("user_event_unperceived_reading")
    minimal = ev.user_event("meister", "nova", "t2", ["m3"], "Hallo")
    reminder = "Ich wollte dich an „Zahnarzt“ erinnern."
    assert encode(ev.impulse_event("meister", "nova", reminder)) == golden("impulse_event")
    with_level = ev.impulse_event("meister", "nova", "Wie ist es gelaufen?", arousal=0.7,
                                  trigger_turn_id="t0")
    assert encode(with_level) == golden("impulse_event_with_level")
    assert encode(ev.impulse_event("meister", "nova", "x", arousal=1)) == \
        golden("impulse_event_level_int")
    assert encode(ev.continue_event(with_level, retry_request("Die Frage fehlt."))) == \
        golden("continue_retry")
    assert encode(ev.continue_event(user, follow_up_request(commitment=True,
                                                            intent="recherche"))) == \
        golden("continue_commitment")
    assert encode(ev.continue_event(user, follow_up_request(commitment=True, intent=""))) == \
        golden("continue_commitment_no_intent")
    wish = ev.continue_event(user, follow_up_request(commitment=False, intent="nachfragen"))
    assert encode(wish) == golden("continue_intent")
    assert encode(ev.continue_event(wish, Continue())) == golden("continue_of_continue")
    assert encode(ev.awaiting_event(user, asked(
        "lists", "Setz Milch drauf", ListCommand(add=["Milch"]), "Welche Liste?",
        [PlanStep(agent="reminders", task="erinnere mich")],
        candidates=["Einkauf", "Baumarkt"]))) == golden("awaiting_lists")
    assert encode(ev.awaiting_event(wish, asked(
        "reminders", "Zahnarzt", ReminderCommand(text="Zahnarzt"), "Wann?", [],
        pending=AgentContext(turn_id="t0")))) == golden("awaiting_reminders")
    assert encode(ev.awaiting_event(user, asked(
        "lists", "x", ListCommand(), "Wie soll sie heißen?", [], candidates=[]))) == \
        golden("awaiting_lists_no_lists")
    # The only event written otherwise than before: the runtime's minimal (test and bench)
    # pipeline perceives nothing, and its user event now says so with the nine empty
    # dimensions, as the product's does when it perceived nothing.
    old = json.loads(golden("user_event_minimal"))
    old["payload"] = {**msgspec.to_builtins(Emotion()), "language": "", **old["payload"]}
    assert encode(minimal) == msgspec.json.encode(old)


@pytest.mark.parametrize("name", [n for kind in EVENT_KINDS for n in golden_names(kind)])
def test_every_stored_event_of_the_old_code_reads_and_writes_back_the_same(name):
    event = decode_event(golden(name))
    kind = {"user": UserPayload, "impulse": ImpulsePayload, "continue": ContinuePayload,
            "awaiting": AwaitingPayload}[name.split("_")[0]]
    assert type(event.payload) is kind and event.turn_id
    if name == "user_event_minimal":
        # Written by the runtime's minimal (test) pipeline, which perceives nothing: it reads
        # as "not perceived"; written now, it carries the nine empty dimensions.
        assert copy_emotion(event.payload, Emotion()) == Emotion() and event.payload.user_prompt == "Hallo"
        return
    assert encode(event) == golden(name)


def test_old_events_read_into_their_fields():
    user = decode_event(golden("user_event")).payload
    assert (user.turn_id, user.message_ids, user.user_prompt, user.language) == (
        "t1", ["m1", "m2"], "Ich hab heute\nden Job verloren", "de")
    assert copy_emotion(user, Emotion()) == the_user()
    impulse = decode_event(golden("impulse_event_with_level")).payload
    assert (impulse.thought, impulse.stimulus_origin, impulse.thought_arousal,
            impulse.trigger_turn_id, impulse.message_ids) == (
        "Wie ist es gelaufen?", "eigener_impuls", 0.7, "t0", [])
    retry = decode_event(golden("continue_retry"))
    assert (retry.payload.retry, retry.payload.reason, retry.payload.thought_arousal,
            retry.trigger_count) == ("thinker", "Die Frage fehlt.", 0.7, 1)
    assert retry.payload.commitment is msgspec.UNSET and retry.payload.intent is msgspec.UNSET
    assert decode_event(golden("continue_intent")).payload.intent == "nachfragen"
    parked = decode_event(golden("awaiting_lists")).payload
    context = read_context(parked.agent_context)
    assert (context.agent, context.question, context.candidates, context.remaining) == (
        "lists", "Welche Liste?", ["Einkauf", "Baumarkt"],
        [PlanStep(agent="reminders", task="erinnere mich")])
    assert read_context(decode_event(golden("awaiting_reminders")).payload.agent_context
                        ).candidates is msgspec.UNSET


def with_payload(name: str, **changes: Any) -> dict[str, Any]:
    record = json.loads(golden(name))
    record["payload"].update(changes)
    return record


def test_an_older_impulse_without_its_level_or_trigger_turn_reads_them_as_unknown():
    record = with_payload("impulse_event")
    del record["payload"]["gedanke_arousal"], record["payload"]["ausloeser_turn_id"]
    payload = decode_event(json.dumps(record)).payload
    assert (payload.thought_arousal, payload.trigger_turn_id) == (None, None)


def test_unknown_fields_of_other_versions_are_ignored():
    record = with_payload("continue_retry", neues_feld={"x": 1})
    record["neu_im_umschlag"] = True
    event = decode_event(json.dumps(record))
    assert encode(event) == golden("continue_retry")


BAD_LEVELS = st.one_of(
    st.booleans(), st.text(max_size=5),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: not 0.0 <= v <= 1.0),
    st.integers().filter(lambda v: v not in (0, 1)), st.lists(st.floats(0, 1), max_size=2))


@hsettings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(level=BAD_LEVELS, name=st.sampled_from(["impulse_event_with_level", "continue_retry"]))
def test_a_stored_level_that_is_no_level_is_dropped_and_reported_never_clamped(
        level, name, caplog):
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="app.runtime.runtime"):
        event = decode_event(json.dumps(with_payload(name, gedanke_arousal=level)))
    assert event.payload.thought_arousal is None  # no level: not 0.0, not 1.0
    assert event.payload.turn_id == "id6"  # the event and its turn are kept
    [report] = [r for r in caplog.records if r.getMessage() == "stored event field dropped"]
    assert report.fields["field"] == "gedanke_arousal"
    assert report.fields["value"] == repr(level)


@hsettings(max_examples=40)
@given(level=st.one_of(st.none(), st.floats(0.0, 1.0), st.sampled_from([0, 1])))
def test_a_stored_level_in_range_reads_as_it_is(level):
    event = decode_event(json.dumps(with_payload("impulse_event", gedanke_arousal=level)))
    assert event.payload.thought_arousal == level


def test_other_unfit_values_are_dropped_one_by_one(caplog):
    record = with_payload("user_event", arousal=3, emotion=7, nachrichten_ids="m1")
    with caplog.at_level(logging.WARNING, logger="app.runtime.runtime"):
        payload = decode_event(json.dumps(record)).payload
    assert (payload.arousal, payload.emotion, payload.message_ids) == (None, "", [])
    assert (payload.mode, payload.user_prompt) == ("tiefgang", "Ich hab heute\nden Job verloren")
    dropped = {r.fields["field"] for r in caplog.records
               if r.getMessage() == "stored event field dropped"}
    assert dropped == {"arousal", "emotion", "nachrichten_ids"}


@pytest.mark.parametrize("source, typ", [("user", "continue"), ("user", "awaiting_user")])
def test_an_event_whose_kind_names_no_payload_is_unreadable(source, typ):
    record = json.loads(golden("user_event"))
    record.update(source=source, typ=typ)
    with pytest.raises(msgspec.ValidationError, match="no event payload"):
        decode_event(json.dumps(record))


@pytest.mark.parametrize("payload", ["text", [1], None, 5])
def test_a_payload_that_is_no_object_is_unreadable(payload):
    record = json.loads(golden("impulse_event"))
    record["payload"] = payload
    with pytest.raises(msgspec.ValidationError):
        decode_event(json.dumps(record))


# --- the old producers as a reference model: any values, the same bytes ------------------------

LABEL = st.text(max_size=8)
IDS = st.lists(st.text(min_size=1, max_size=6), max_size=3)
LEVEL = st.one_of(st.none(), st.floats(0.0, 1.0))


def old_event(source: str, typ: str, payload: dict[str, Any], trigger_count: int = 0) -> bytes:
    """How the old code wrote an event: the envelope around a dict payload."""
    return msgspec.json.encode({"event_id": "e", "user_id": "u", "character_id": "c",
                                "source": source, "typ": typ, "payload": payload,
                                "trigger_count": trigger_count, "erstellt_am": NOW})


def new_event(payload: Any, source: str, typ: str, trigger_count: int = 0) -> bytes:
    return encode(ev.Event(event_id="e", user_id="u", character_id="c", source=source,
                           typ=typ, payload=payload, trigger_count=trigger_count,
                           erstellt_am=NOW))


@hsettings(max_examples=80)
@given(labels=st.lists(LABEL, min_size=8, max_size=8), arousal=LEVEL, language=LABEL,
       turn_id=st.text(min_size=1, max_size=6), ids=IDS, words=st.text(max_size=20))
def test_a_user_payload_writes_what_the_dict_wrote(labels, arousal, language, turn_id, ids,
                                                   words):
    names = [n for n in Emotion.__struct_fields__ if n != "arousal"]
    perceived = Emotion(arousal=arousal, **dict(zip(names, labels, strict=True)))
    # Old: `payload = to_builtins(user); payload["language"] = …; then turn_id, ids, words`.
    old = {**msgspec.to_builtins(perceived), "language": language, "turn_id": turn_id,
           "nachrichten_ids": ids, "user_prompt": words}
    payload = ev.user_event("u", "c", turn_id, ids, words, perceived, language).payload
    assert new_event(payload, "user", "message") == old_event("user", "message", old)


@hsettings(max_examples=80)
@given(thought=st.text(min_size=1, max_size=20).filter(str.strip), level=LEVEL,
       trigger=st.one_of(st.none(), st.text(max_size=6)), turn_id=st.text(min_size=1,
                                                                          max_size=6))
def test_an_impulse_payload_writes_what_the_dict_wrote(thought, level, trigger, turn_id):
    old = {"turn_id": turn_id, "nachrichten_ids": [], "eigener_gedanke": thought,
           "reiz_herkunft": "eigener_impuls", "gedanke_arousal": level,
           "ausloeser_turn_id": trigger}
    with mock.patch.object(ev, "new_id", lambda: turn_id):
        payload = ev.impulse_event("u", "c", thought, arousal=level,
                                   trigger_turn_id=trigger).payload
    assert new_event(payload, "character", "message") == old_event("character", "message", old)


REQUESTS = st.one_of(
    st.builds(lambda r: ({"retry": "thinker", "grund": r}, retry_request(r)), st.text(max_size=9)),
    st.builds(lambda i: ({"commitment": i or "1"}, follow_up_request(commitment=True, intent=i)),
              st.text(max_size=9)),
    st.builds(lambda i: ({"absicht": i}, follow_up_request(commitment=False, intent=i)),
              st.text(max_size=9)),
    st.just(({}, Continue())))


@hsettings(max_examples=80)
@given(request=REQUESTS, turn_id=st.text(min_size=1, max_size=6), ids=IDS, level=LEVEL,
       count=st.integers(0, 2))
def test_a_continue_payload_writes_what_the_dict_wrote(request, turn_id, ids, level, count):
    old_request, new_request = request
    # Old: `payload = dict(request)`, then turn_id, nachrichten_ids, gedanke_arousal.
    old = {**old_request, "turn_id": turn_id, "nachrichten_ids": ids, "gedanke_arousal": level}
    parent = ev.Event(event_id="p", user_id="u", character_id="c", source="character",
                      typ="continue", payload=ContinuePayload(turn_id=turn_id, message_ids=ids,
                                                              thought_arousal=level),
                      trigger_count=count)
    follow = ev.continue_event(parent, new_request)
    assert new_event(follow.payload, "character", "continue", count + 1) == old_event(
        "character", "continue", old, count + 1)


# --- read for real: what an older version left in Redis carries on -----------------------------

def test_an_unfit_field_of_a_parked_agent_context_is_dropped_and_the_rest_resumes(caplog):
    context = msgspec.json.decode(golden("awaiting_lists"))["payload"]["pending_agent"]
    context["remaining"] = [{"agent": "kalender", "task": "x"}]
    context["question"] = 5
    with caplog.at_level(logging.WARNING, logger="app.pipeline.agents.follow_up"):
        read = read_context(context)
    assert (read.agent, read.task, read.command["add"]) == ("lists", "Setz Milch drauf",
                                                            ["Milch"])
    assert (read.remaining, read.question) == ([], "")
    dropped = {r.fields["field"] for r in caplog.records
               if r.getMessage() == "pending agent context field dropped"}
    assert dropped == {"remaining", "question"}


async def test_an_agent_question_parked_by_the_old_code_resumes_with_the_next_message(
        fake_model, make_settings, aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    lists = ListStore(app[REDIS], "local", "nova")
    await lists.apply("Einkauf", add=["Brot"])
    await lists.apply("Baumarkt", add=["Schrauben"])
    parked = msgspec.json.decode(golden("awaiting_lists"))
    parked["user_id"] = "local"  # the old record, parked for this pair
    await app[REDIS].rpush(keys.event_awaiting("local", "nova"), msgspec.json.encode(parked))
    fake_model.script("router", {"answers_pending": True})
    fake_model.script("agent_lists", {"list_name": "Einkauf"})
    fake_model.script("responder", "Milch steht auf der Einkaufsliste.")

    done = await chat.response(await chat.send("Auf die Einkaufsliste"))
    await chat.settle()

    assert done["text"] == "Milch steht auf der Einkaufsliste."
    by_name = {lst["name"]: lst["items"] for lst in await chat.get("/api/characters/nova/lists")}
    assert by_name == {"Einkauf": ["Brot", "Milch"], "Baumarkt": ["Schrauben"]}
    assert "Welche Liste?" in last_user_message(fake_model.chats("agent_lists")[0])
    # The plan's remaining step, kept in the old context, runs after the answer.
    assert purposes(fake_model).count("agent_reminders") == 1
    assert await app[REDIS].llen(keys.event_awaiting("local", "nova")) == 0
