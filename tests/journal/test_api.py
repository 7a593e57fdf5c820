"""The journal through the real server (design §8, §9): real SQLite, real Redis, the scripted
fake model over HTTP (`tests/fakemodel.py`), the offline model, the WebSocket."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from app.api.app_keys import DB, SETTINGS
from app.journal.jobs import JournalProgress
from app.llm import budget as budgeting
from app.memory.message_log import LoggedMessage, MessageLog
from app.runtime.wire import WS_DECODER
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import UNNAMED, Fault
from tests.pipeline_support import open_chat
from tests.store import store_connection
from tests.waiting import wait_job

DATE = "2026-03-01"
LINES = [
    {"role": "assistant", "text": "Guten Morgen! Wie hast du geschlafen?"},
    {"role": "user", "text": "Um 6:00 Uhr bin ich aufgestanden, müde."},
    {"role": "user", "text": "Zum Frühstück gab es Brot mit Anna."},
    {"role": "assistant", "text": "Klingt schön. Und am Abend?"},
    {"role": "user", "text": "Gegen 9 habe ich gelesen. Vielleicht war es auch später."},
]
USER_LINES = [line["text"] for line in LINES if line["role"] == "user"]
ASSISTANT_LINES = [line["text"] for line in LINES if line["role"] == "assistant"]


def valid_reconstruction() -> dict[str, Any]:
    return {
        "source_order": ["u1", "u2", "u3"],
        "chronology": [
            {"source_id": "u1", "source": "user", "time": "6:00 Uhr",
             "claims": [{"kind": "event", "evidence": "bin ich aufgestanden"}]},
            {"source_id": "u2", "source": "user", "time": None,
             "claims": [{"kind": "meal", "evidence": "Brot mit Anna"}]},
            {"source_id": "u3", "source": "user", "time": "Gegen 9",
             "claims": [{"kind": "event", "evidence": "habe ich gelesen"}]}],
        "uncertainties": [{"source_id": "u3", "evidence": "Vielleicht war es auch später."}],
    }


@pytest.fixture
def journal_app(fake_model, make_settings) -> Callable[..., web.Application]:
    fake_model.context_length = 32768

    def make(**overrides: Any) -> web.Application:
        settings = make_settings(**fake_model.overrides(**{"llm_context": 32768, **overrides}))
        return create_app(settings, local_token=TOKEN)

    return make


@pytest.fixture
async def jclient(aiohttp_client, journal_app) -> TestClient:
    return await aiohttp_client(journal_app())


async def call(client: TestClient, method: str, path: str, status: int = 200,
               headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
    response = await client.request(method, path, headers={**AUTH, **(headers or {})},
                                    **kwargs)
    body = await response.text()
    assert response.status == status, (response.status, body)
    return json.loads(body) if body and response.content_type == "application/json" else body


async def import_day(client: TestClient, lines: list[dict[str, Any]] = LINES,
                     date: str = DATE) -> dict[str, Any]:
    return await call(client, "POST", "/api/journal/import", 201,
                      json={"date": date, "messages": lines})


async def generate(client: TestClient, date: str = DATE, *,
                   headers: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
    started = await call(client, "POST", f"/api/journal/days/{date}/drafts", 202,
                         json=body or None, headers={**AUTH, **(headers or {})})
    return await wait_job(client, started["job_id"])


async def draft_of(client: TestClient, job: dict[str, Any]) -> dict[str, Any]:
    assert job["state"] == "done", job
    return await call(client, "GET", f"/api/journal/drafts/{job['draft_id']}")


def stage_two_input(fake_model) -> dict[str, Any]:
    """The artifact stage 2 was sent (its first request; a corrective retry repeats it)."""
    request = fake_model.chats("journal_generate")[0]
    return json.loads(request.messages[-1]["content"])


# --- import --------------------------------------------------------------------------------------

async def test_import_stores_a_day_and_lists_it(jclient):
    imported = await import_day(jclient)
    assert len(imported["message_ids"]) == len(LINES)
    days = await call(jclient, "GET", "/api/journal/days")
    assert days == [{"date": DATE, "messages": 5, "user_messages": 3, "entry_id": None,
                     "draft_id": None, "photos": 0, "photo": None}]
    day = await call(jclient, "GET", f"/api/journal/days/{DATE}")
    [conversation] = day["conversations"]
    assert conversation["source"] == "import" and conversation["character_id"] is None
    assert [m["text"] for m in conversation["messages"]] == [line["text"] for line in LINES]
    assert day["entry"] is None and day["drafts"] == []


@pytest.mark.parametrize("body,status,code", [
    ({"date": DATE, "messages": [{"role": "system", "text": "x"}]}, 400, "invalid_role"),
    ({"date": DATE, "messages": [{"role": "user", "text": "ok"},
                                 {"role": "user", "text": "   "}]}, 400, "empty_text"),
    ({"date": "2026-02-30", "messages": [{"role": "user", "text": "x"}]}, 400, "invalid_date"),
    ({"date": "1.3.2026", "messages": [{"role": "user", "text": "x"}]}, 400, "invalid_date"),
    ({"date": DATE, "messages": []}, 400, "empty_import"),
    ({"date": DATE, "messages": [{"role": "user", "text": "x", "mood": 1}]}, 400,
     "invalid_request"),
    ({"date": DATE, "messages": [{"role": "user", "text": "x", "at": "yesterday"}]}, 400,
     "invalid_at"),
    ({"date": DATE, "messages": [{"role": "user", "text": "x",
                                  "at": "2026-03-02T12:00:00+00:00"}]}, 400, "invalid_at"),
    ({"date": DATE, "messages": [{"role": "user", "text": "x" * 20001}]}, 413, "text_too_long"),
])
async def test_a_bad_import_is_refused_whole_and_writes_nothing(jclient, body, status, code):
    answer = await call(jclient, "POST", "/api/journal/import", status, json=body)
    assert answer["error"]["code"] == code
    assert await call(jclient, "GET", "/api/journal/days") == []


async def test_an_import_time_belongs_to_the_users_local_day(aiohttp_client, journal_app):
    client = await aiohttp_client(journal_app(timezone="Europe/Berlin"))
    # 00:30 in Berlin on the day clocks spring forward is 23:30 UTC the day before
    late = [{"role": "user", "text": "Nach Mitternacht", "at": "2026-03-28T23:30:00Z"}]
    await call(client, "POST", "/api/journal/import", 400,
               json={"date": "2026-03-28", "messages": late})
    await import_day(client, late, date="2026-03-29")


# --- generation ----------------------------------------------------------------------------------

async def test_a_valid_reconstruction_becomes_a_draft_from_the_artifact_only(jclient,
                                                                             fake_model):
    fake_model.script("journal_reconstruct", valid_reconstruction())
    fake_model.script("journal_generate", "Um 6:00 Uhr bin ich müde aufgestanden.")
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    assert draft["text"] == "Um 6:00 Uhr bin ich müde aufgestanden."
    assert draft["reconstruction_status"] == "valid" and draft["validation"] == []
    assert draft["status"] == "current" and draft["narration"] == "model"
    assert [s["source_id"] for s in draft["sources"]] == ["u1", "u2", "u3"]
    trace = draft["trace"]
    assert trace["window"] == 32768 and trace["reserved_output"] == 4096
    assert [s["stage"] for s in trace["stages"]] == ["reconstruct", "narrate"]
    assert "Anna" not in json.dumps(trace)  # no names, no prompt, no reply in the trace

    [first] = fake_model.chats("journal_reconstruct")
    assert first.body["response_format"]["json_schema"]["name"] == "journal_reconstruct"
    assert first.schema["title"] == "journal_reconstruct"
    # The structs have no docstrings: a docstring would reach the model as a description.
    assert "description" not in json.dumps(first.schema)
    sent = json.loads(first.messages[-1]["content"])
    assert [s["id"] for s in sent["sources"]] == ["a1", "u1", "u2", "a2", "u3"]
    artifact = stage_two_input(fake_model)
    assert artifact["kind"] == "verified_artifact"
    assert [s["text"] for s in artifact["sources"]] == USER_LINES
    assert artifact["sources"][0]["time"] == "6:00 Uhr"
    assert artifact["uncertainties"] == [{"source_id": "u3",
                                          "evidence": "Vielleicht war es auch später."}]
    stage_two = json.dumps(fake_model.chats("journal_generate")[0].body, ensure_ascii=False)
    assert not any(line in stage_two for line in ASSISTANT_LINES)
    assert '"meal"' not in stage_two  # model labels are not passed on


def _invalid(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = valid_reconstruction()
    change(data)
    return data


@pytest.mark.parametrize("answer,code", [
    (_invalid(lambda d: d.update(source_order=["u2", "u1", "u3"])), "order_changed"),
    (_invalid(lambda d: d["chronology"].pop()), "coverage_incomplete"),
    (_invalid(lambda d: d["chronology"][1].update(source="assistant")), "assistant_source"),
    (_invalid(lambda d: d["chronology"][1]["claims"][0].update(evidence="Brot und Butter")),
     "evidence_not_verbatim"),
    (_invalid(lambda d: d.update(events=["aufgestanden"])), "legacy_field"),
    (_invalid(lambda d: d["chronology"][0].update(time="früh")), "time_not_pure"),
    (_invalid(lambda d: d["chronology"][1].update(time="6:00 Uhr")), "time_source_mismatch"),
    (_invalid(lambda d: d["uncertainties"].append({"source_id": "a1", "evidence": "Guten"})),
     "assistant_source"),
    (_invalid(lambda d: d.update(chronology=[d["chronology"][2], d["chronology"][0],
                                             d["chronology"][1]])), "reorder_unjustified"),
    ("not json at all", "model_bad_output"),
])
async def test_each_invalid_reconstruction_takes_the_fallback(jclient, fake_model, answer, code):
    fake_model.script("journal_reconstruct", answer, answer)  # the repair retry fails the same
    fake_model.script("journal_generate", "Ein Tag.")
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    assert draft["reconstruction_status"] == "fallback"
    assert draft["validation"][0] == "reconstruction_invalid" and code in draft["validation"]
    artifact = stage_two_input(fake_model)
    assert artifact["reconstruction_status"] == "fallback"
    assert artifact["sources"] == [{"source_id": f"u{i}", "text": text}
                                   for i, text in enumerate(USER_LINES, 1)]
    assert artifact["uncertainties"] == [] and artifact["contradictions"] == []


# A day as a person tells it (issue 22, section 1): two lines with times, told out of order,
# and lines without any time between and after them.
SOME_TIMED = [
    {"role": "user", "text": "Abends um 20:15 Kino mit Tom."},
    {"role": "user", "text": "Morgens um halb acht gejoggt."},
    {"role": "user", "text": "Der Tag war warm."},
    {"role": "user", "text": "Danach habe ich gelesen."},
]


def some_timed(order: list[str]) -> dict[str, Any]:
    times_by_id = {"u1": "20:15", "u2": "halb acht"}
    return {"source_order": ["u1", "u2", "u3", "u4"],
            "chronology": [{"source_id": sid, "source": "user", "time": times_by_id.get(sid),
                            "claims": []} for sid in order]}


@pytest.mark.parametrize("order,status", [
    (["u2", "u1", "u3", "u4"], "valid"),     # the two timed lines swap, the rest stays
    (["u1", "u3", "u2", "u4"], "fallback"),  # a timed line moved past an untimed one
    (["u2", "u3", "u1", "u4"], "fallback"),  # the untimed u3 put before u1
])
async def test_a_day_where_only_some_lines_have_times(jclient, fake_model, order, status):
    answer = some_timed(order)
    fake_model.script("journal_reconstruct", answer, answer)
    fake_model.script("journal_generate", "Ein Tag.")
    await import_day(jclient, SOME_TIMED)
    draft = await draft_of(jclient, await generate(jclient))
    assert draft["reconstruction_status"] == status
    artifact = stage_two_input(fake_model)
    if status == "valid":
        assert draft["validation"] == []
        assert [s["source_id"] for s in artifact["sources"]] == order
        assert [s.get("time") for s in artifact["sources"]] == ["halb acht", "20:15", None, None]
    else:
        assert draft["validation"] == ["reconstruction_invalid", "reorder_unjustified"]
        assert [s["source_id"] for s in artifact["sources"]] == ["u1", "u2", "u3", "u4"]
    # Every line reaches stage 2 whole, in either order.
    assert sorted(s["text"] for s in artifact["sources"]) == sorted(
        line["text"] for line in SOME_TIMED)


async def test_the_fallbacks_stage_two_prompt_is_the_one_the_budget_measured(jclient,
                                                                              fake_model):
    fake_model.script("journal_reconstruct", "not json", "not json")
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    sent = fake_model.chats("journal_generate")[0]  # the retry after it adds the named lines
    measured = budgeting.estimate_tokens(sent.messages, jclient.app[SETTINGS].chars_per_token)
    assert draft["trace"]["estimated_input"][1] == measured


TRACE_KEYS = ["provider", "model", "window_source", "window", "margin", "margin_tokens",
              "reserved_output", "estimated_input", "budget_ok", "prompt_tokens",
              "completion_tokens", "stages"]
STAGE_KEYS = ["stage", "outcome", "codes", "ms", "prompt_tokens", "completion_tokens"]


async def test_a_drafts_trace_is_stored_as_it_always_was(jclient, fake_model, in_store):
    fake_model.script("journal_reconstruct", valid_reconstruction())
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    with in_store() as conn:
        [(raw,)] = conn.execute("SELECT trace_json FROM journal_drafts").fetchall()
    stored = json.loads(raw)
    # Keys in this order, in the stdlib's JSON layout the first version wrote.
    assert list(stored) == TRACE_KEYS and raw == json.dumps(stored)
    assert [list(stage) for stage in stored["stages"]] == [STAGE_KEYS, STAGE_KEYS]
    assert stored == draft["trace"]


async def test_a_trace_written_by_an_earlier_version_reads_as_written(jclient, in_store):
    await import_day(jclient)
    job = await generate(jclient)
    earlier = ('{"provider": "openai", "model": "fake", "window_source": "provider", '
               '"window": 32768, "margin": 0.15, "margin_tokens": 4916, "reserved_output": '
               '4096, "estimated_input": [789, 477], "budget_ok": true, "prompt_tokens": null, '
               '"completion_tokens": null, "stages": [{"stage": "reconstruct", "outcome": '
               '"fallback", "codes": ["reconstruction_invalid", "privacy_blocked"], "ms": '
               '12.5, "prompt_tokens": null, "completion_tokens": null}], "later_key": 1}')
    with in_store() as conn:
        conn.execute("UPDATE journal_drafts SET trace_json = ?", (earlier,))
    draft = await call(jclient, "GET", f"/api/journal/drafts/{job['draft_id']}")
    assert draft["trace"] == json.loads(earlier)


async def test_a_day_without_user_text_is_refused_and_no_request_is_sent(jclient, fake_model):
    await import_day(jclient, [{"role": "assistant", "text": "Hallo?"}])
    answer = await call(jclient, "POST", f"/api/journal/days/{DATE}/drafts", 422)
    assert answer["error"]["code"] == "no_user_sources"
    await call(jclient, "POST", "/api/journal/days/2026-01-01/drafts", 422)
    assert fake_model.chats() == []


async def test_a_day_over_one_prompt_drafts_in_parts(jclient, fake_model):
    # usable 27852 - 4096 reserved = 23756 tokens = 47512 chars: three 20 000-char lines are
    # no longer refused (issue 40 item 4; tests/journal/test_parts.py): two parts each stage.
    await import_day(jclient, [{"role": "user", "text": f"{i} " + "Wort " * 3999}
                               for i in range(3)])
    job = await generate(jclient)
    assert job["state"] == "done"
    assert len(fake_model.chats("journal_reconstruct")) == 2


async def test_the_day_cap_and_a_small_window_fail_before_any_request(aiohttp_client,
                                                                      journal_app, fake_model):
    client = await aiohttp_client(journal_app(journal_day_max_messages=2))
    await import_day(client, LINES[1:3])
    await import_day(client, LINES[4:])  # each import fits; the day (3) does not
    job = await generate(client)
    assert job["error"]["code"] == "prompt_budget_exceeded"
    assert "journal_day_max_messages" in job["error"]["message"]
    await client.close()
    fake_model.context_length = 16384
    small = await aiohttp_client(journal_app(llm_context=16384))
    job = await generate(small)
    assert job["error"]["code"] == "model_context_too_small"
    assert fake_model.chats() == []


async def test_progress_reaches_every_socket(jclient, fake_model):
    fake_model.script("journal_reconstruct", valid_reconstruction())
    await import_day(jclient)
    sockets = [await jclient.ws_connect("/api/ws", headers=AUTH) for _ in range(2)]
    job = await generate(jclient)
    for ws in sockets:
        seen = []
        while not seen or seen[-1]["state"] not in ("done", "failed"):
            raw = await ws.receive_str(timeout=5)
            message = json.loads(raw)
            if message["type"] == "journal_progress":
                # One of the WebSocket messages of design §9, in the layout it always had.
                assert isinstance(WS_DECODER.decode(raw), JournalProgress)
                assert raw == (
                    f'{{"type":"journal_progress","character_id":"","at":{message["at"]!r},'
                    f'"job_id":"{job["job_id"]}","date":"{DATE}","state":"{message["state"]}",'
                    f'"draft_id":{json.dumps(message["draft_id"])},"error":null}}')
                seen.append(message)
        assert [m["state"] for m in seen] == ["queued", "reconstruct", "narrate", "done"]
        assert {m["job_id"] for m in seen} == {job["job_id"]}
        assert seen[-1]["draft_id"] == job["draft_id"] and seen[-1]["date"] == DATE
        await ws.close()


async def test_a_failed_jobs_progress_names_its_error(aiohttp_client, journal_app):
    jclient = await aiohttp_client(journal_app(journal_day_max_messages=2))
    await import_day(jclient, LINES[1:3])
    await import_day(jclient, LINES[4:])  # each import fits; the day (3) does not
    ws = await jclient.ws_connect("/api/ws", headers=AUTH)
    job = await generate(jclient)
    while True:
        raw = await ws.receive_str(timeout=5)
        if json.loads(raw).get("state") == "failed":
            break
    progress = WS_DECODER.decode(raw)
    assert isinstance(progress, JournalProgress) and progress.draft_id is None
    assert progress.error == job["error"] and progress.error["code"] == "prompt_budget_exceeded"
    assert raw.endswith(f',"state":"failed","draft_id":null,"error":'
                        f'{{"code":"prompt_budget_exceeded","message":'
                        f'{json.dumps(job["error"]["message"])}}}}}')
    await ws.close()


async def test_one_job_per_user_and_shutdown_marks_a_running_job_failed(aiohttp_client,
                                                                        journal_app,
                                                                        fake_model, in_store):
    fake_model.script("journal_reconstruct", Fault.hang())
    app = journal_app()
    client = await aiohttp_client(app)
    await import_day(client)
    started = await call(client, "POST", f"/api/journal/days/{DATE}/drafts", 202)
    await fake_model.wait_requests(1)
    busy = await call(client, "POST", f"/api/journal/days/{DATE}/drafts", 409)
    assert busy["error"]["code"] == "journal_busy"
    assert (await call(client, "GET", f"/api/journal/jobs/{started['job_id']}"))["state"] \
        == "reconstruct"
    await client.close()  # the server stops with the job running
    with in_store() as conn:
        state, code = conn.execute("SELECT state, error_code FROM journal_jobs").fetchone()
    assert (state, code) == ("failed", "interrupted")


@pytest.mark.parametrize("owner", [None, "other0000001"])
async def test_a_job_left_open_by_a_dead_process_is_failed_at_start(aiohttp_client,
                                                                    journal_app, in_store,
                                                                    owner):
    """With the embedded Redis one process owns the store: every other owner is dead (a job
    of before owners had none)."""
    first = await aiohttp_client(journal_app())
    await first.close()
    with in_store() as conn:  # as a killed process leaves it
        conn.execute("INSERT INTO journal_jobs (job_id, user_id, calendar_date, state, owner, "
                     "created_at, updated_at) VALUES ('job_dead', 'local', ?, 'narrate', ?, "
                     "1, 1)", (DATE, owner))
    client = await aiohttp_client(journal_app())
    job = await call(client, "GET", "/api/journal/jobs/job_dead")
    assert job["state"] == "failed" and job["error"]["code"] == "interrupted"
    await call(client, "POST", f"/api/journal/days/{DATE}/drafts", 422)  # not busy any more


async def test_a_failing_job_loses_nothing(aiohttp_client, journal_app, fake_model):
    client = await aiohttp_client(journal_app(model_retries=0))
    await import_day(client)
    first = await generate(client)
    assert first["state"] == "done"
    fake_model.script("journal_reconstruct", valid_reconstruction())
    fake_model.script("journal_generate", Fault.status(500))
    failed = await generate(client)
    assert failed["state"] == "failed" and failed["error"]["code"] == "model_http_error"
    [day] = await call(client, "GET", "/api/journal/days")
    assert day["draft_id"] == first["draft_id"]
    assert (await call(client, "GET", f"/api/journal/drafts/{first['draft_id']}"))["status"] \
        == "current"
    second = await generate(client)
    drafts = (await call(client, "GET", f"/api/journal/days/{DATE}"))["drafts"]
    assert [(d["draft_id"], d["status"]) for d in drafts] == [
        (second["draft_id"], "current"), (first["draft_id"], "superseded")]


async def test_a_leaking_reply_is_never_used(aiohttp_client, journal_app, fake_model):
    client = await aiohttp_client(journal_app(llm_remote=True, privacy_identities="Anna"))
    leak = _invalid(lambda d: d["chronology"][1]["claims"].append(
        {"kind": "person", "evidence": "Anna"}))
    # A remote provider is never told the purpose: the stages' calls come unnamed, in order
    # (reconstruct and its retry, then narrate and its retry).
    fake_model.script(UNNAMED, leak, leak, "LEAK: Ich war mit Anna essen.",
                      "LEAK: Ich war mit Anna essen.")
    await import_day(client)
    draft = await draft_of(client, await generate(client))
    for request in fake_model.chats():
        sent = json.dumps(request.messages, ensure_ascii=False)
        assert "Anna" not in sent and "[PERSON_1]" in sent  # both stages masked
    assert draft["reconstruction_status"] == "fallback"
    assert "privacy_blocked" in draft["validation"]
    assert draft["narration"] == "local" and "LEAK" not in draft["text"]
    assert draft["text"].splitlines()[0] == DATE
    assert all(line in draft["text"] for line in USER_LINES)
    assert draft["trace"]["stages"][1]["codes"] == ["privacy_blocked"]
    stats = await call(client, "GET", "/api/privacy/stats")
    assert stats["fallbacks"] == 2  # both stages took their local fallback, and said so


async def test_the_chat_log_is_read_as_a_conversation_per_character(jclient, fake_model):
    log = MessageLog(jclient.app[DB])
    for index, (role, text) in enumerate([("user", "Heute war der Markt voll."),
                                          ("assistant", "Was hast du gekauft?"),
                                          ("user", "Äpfel und Käse.")]):
        await log.append(LoggedMessage(f"k{index}", "local", "nova", f"t{index}", [], role,
                                       "reply", text, 1_772_000_000.0 + index, DATE))
    await log.append(LoggedMessage("other", "someone", "nova", "t9", [], "user", "reply",
                                   "Not mine", 1_772_000_000.0, DATE))
    await import_day(jclient, [{"role": "user", "text": "Abends ein Buch."}])
    day = await call(jclient, "GET", f"/api/journal/days/{DATE}")
    chat, imported = day["conversations"]
    assert chat["source"] == "chat" and chat["character_id"] == "nova"
    assert [m["text"] for m in chat["messages"]] == ["Heute war der Markt voll.",
                                                     "Was hast du gekauft?", "Äpfel und Käse."]
    [listed] = await call(jclient, "GET", "/api/journal/days")
    assert (listed["messages"], listed["user_messages"]) == (4, 3)

    draft = await draft_of(jclient, await generate(
        jclient, conversation_ids=[chat["conversation_id"]]))
    assert [s["message_id"] for s in draft["sources"]] == [
        chat["messages"][0]["message_id"], chat["messages"][2]["message_id"]]
    bad = await call(jclient, "POST", f"/api/journal/days/{DATE}/drafts", 400,
                     json={"conversation_ids": ["nope"]})
    assert bad["error"]["code"] == "unknown_conversation"


async def test_the_offline_model_writes_an_entry_out_of_the_box(client):
    await import_day(client)
    draft = await draft_of(client, await generate(client))
    assert draft["reconstruction_status"] == "valid" and draft["validation"] == []
    assert all(line in draft["text"] for line in USER_LINES)
    assert not any(line in draft["text"] for line in ASSISTANT_LINES)


async def test_an_offline_draft_says_what_it_is_and_keeps_requests_and_questions_apart(
        aiohttp_client, make_settings):
    """Issue 22, section 3: without a model the draft is the day's told lines, unchanged,
    labelled as made by this machine; a request the character carried out stands in the
    Done list under the text, a question to it not in the text — the refs name every line
    and stage 1 covers them all."""
    chat = await open_chat(aiohttp_client, create_app(make_settings(llm_provider="offline"),
                                                      local_token=TOKEN))
    for text in ("Heute war ich im Park.", "Setz Milch auf die Einkaufsliste",
                 "Wie wird das Wetter morgen?", "Abends habe ich gelesen."):
        await chat.response(await chat.send(text))
    await chat.settle()
    [day] = await call(chat.client, "GET", "/api/journal/days")
    lines = (await call(chat.client, "GET", f"/api/journal/days/{day['date']}"))[
        "conversations"][0]["messages"]
    assert [m["done"] for m in lines if m["role"] == "user"] == [False, True, False, False]

    draft = await draft_of(chat.client, await generate(chat.client, day["date"],
                                                       language="de"))
    assert draft["text"] == ("Heute war ich im Park.\n\nAbends habe ich gelesen.\n\n"
                             "Erledigt:\n- Setz Milch auf die Einkaufsliste")
    assert [(s["source_id"], s["act"]) for s in draft["sources"]] == [
        ("u1", None), ("u2", "done"), ("u3", "question"), ("u4", None)]
    assert draft["narration"] == "local"  # no model wrote it
    stages = {s["stage"]: s for s in draft["trace"]["stages"]}
    assert draft["trace"]["provider"] == "offline"
    assert (stages["reconstruct"]["outcome"], stages["reconstruct"]["codes"]) == (
        "offline", ["no_model"])
    assert (stages["narrate"]["outcome"], stages["narrate"]["codes"]) == (
        "offline", ["no_model"])
    assert draft["reconstruction_status"] == "valid" and draft["validation"] == []
    english = await draft_of(chat.client, await generate(
        chat.client, day["date"], headers={"Accept-Language": "en-GB,de;q=0.5"}))
    assert english["text"].endswith("Done:\n- Setz Milch auf die Einkaufsliste")
    await chat.close()


async def test_an_offline_draft_leaves_out_commands_that_were_not_carried_out(
        aiohttp_client, make_settings):
    """A command to the character is no part of the day's story, also when it was not
    carried out (its question back never answered): the offline draft leaves it out, the
    refs still name it."""
    chat = await open_chat(aiohttp_client, create_app(make_settings(llm_provider="offline"),
                                                      local_token=TOKEN))
    for text in ("Heute war ich im Park.", "Abends habe ich gelesen.",
                 "Erinnere mich an die Wäsche"):
        await chat.response(await chat.send(text))
    await chat.settle()
    [day] = await call(chat.client, "GET", "/api/journal/days")
    lines = (await call(chat.client, "GET", f"/api/journal/days/{day['date']}"))[
        "conversations"][0]["messages"]
    assert [m["done"] for m in lines if m["role"] == "user"] == [False, False, False]
    draft = await draft_of(chat.client, await generate(chat.client, day["date"],
                                                       language="de"))
    assert draft["text"] == "Heute war ich im Park.\n\nAbends habe ich gelesen."
    assert [s["source_id"] for s in draft["sources"]] == ["u1", "u2", "u3"]  # refs name all
    await chat.close()


async def test_the_action_mark_reaches_the_journal_through_the_message_log(jclient):
    log = MessageLog(jclient.app[DB])
    for index, (turn, role, text) in enumerate([
            ("t1", "user", "Setz Brot auf die Liste"), ("t1", "assistant", "Auf welche Liste?"),
            ("t2", "user", "Wocheneinkauf"), ("t2", "assistant", "Brot steht drauf."),
            ("t3", "user", "Erinnere mich an den Zahnarzt"), ("t3", "assistant", "Ging nicht."),
    ]):
        await log.append(LoggedMessage(f"k{index}", "local", "nova", turn, [], role, "reply",
                                       text, 1_772_000_000.0 + index, DATE))
    await log.mark_actions("local", "nova", ["t1", "t2"], True, at=1_772_000_010.0)
    await log.mark_actions("local", "nova", ["t3"], True, at=1_772_000_011.0)
    await log.mark_actions("local", "nova", ["t3"], False, at=1_772_000_012.0)  # the last wins
    await log.mark_actions("local", "other", ["t2"], False, at=1_772_000_013.0)  # not this pair
    [chat] = (await call(jclient, "GET", f"/api/journal/days/{DATE}"))["conversations"]
    assert [(m["text"], m["done"]) for m in chat["messages"]] == [
        ("Setz Brot auf die Liste", True), ("Auf welche Liste?", False),
        ("Wocheneinkauf", True), ("Brot steht drauf.", False),
        ("Erinnere mich an den Zahnarzt", False), ("Ging nicht.", False)]


# --- entries -------------------------------------------------------------------------------------

async def test_entries_versions_trash_and_export(client):
    await import_day(client)
    job = await generate(client)
    entry = await call(client, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": "Erste Fassung.", "draft_id": job["draft_id"]})
    [v1] = entry["versions"]
    assert v1["origin"] == "draft" and len(v1["sources"]) == 3
    again = await call(client, "POST", "/api/journal/entries", 409,
                       json={"date": DATE, "text": "Noch eine."})
    assert again["error"]["code"] == "entry_exists"
    entry_id = entry["entry_id"]
    edited = await call(client, "PUT", f"/api/journal/entries/{entry_id}",
                        json={"text": "Zweite Fassung."})
    assert edited["text"] == "Zweite Fassung."
    assert [v["origin"] for v in edited["versions"]] == ["draft", "edit"]
    assert edited["versions"][1]["sources"] == v1["sources"]
    restored = await call(client, "POST", f"/api/journal/entries/{entry_id}/restore",
                          json={"version_id": v1["version_id"]})
    assert restored["text"] == "Erste Fassung."
    assert [v["text"] for v in restored["versions"]] == ["Erste Fassung.", "Zweite Fassung.",
                                                         "Erste Fassung."]
    assert restored["current_version_id"] == restored["versions"][2]["version_id"]

    markdown = await call(client, "GET", "/api/journal/export?format=md")
    assert f"## {DATE}" in markdown and "Erste Fassung." in markdown
    exported = await call(client, "GET", "/api/journal/export?format=json")
    assert [e["text"] for e in exported["entries"]] == ["Erste Fassung."]

    purge_live = await call(client, "DELETE", f"/api/journal/trash/{entry_id}", 409)
    assert purge_live["error"]["code"] == "not_in_trash"
    await call(client, "DELETE", f"/api/journal/entries/{entry_id}", 204)
    [trashed] = await call(client, "GET", "/api/journal/trash")
    assert trashed["entry_id"] == entry_id and trashed["deleted_at"]
    assert (await call(client, "GET", f"/api/journal/days/{DATE}"))["entry"] is None
    assert (await call(client, "GET", "/api/journal/export?format=json"))["entries"] == []
    await call(client, "PUT", f"/api/journal/entries/{entry_id}", 409, json={"text": "x"})
    back = await call(client, "POST", f"/api/journal/entries/{entry_id}/undelete")
    assert back["deleted_at"] is None and back["text"] == "Erste Fassung."
    assert await call(client, "GET", "/api/journal/trash") == []

    await call(client, "DELETE", f"/api/journal/entries/{entry_id}", 204)
    await call(client, "DELETE", f"/api/journal/trash/{entry_id}", 204)
    await call(client, "GET", f"/api/journal/entries/{entry_id}", 404)
    scratch = await call(client, "POST", "/api/journal/entries", 201,
                         json={"date": DATE, "text": "Von Hand."})
    assert scratch["versions"][0]["origin"] == "edit" and scratch["versions"][0]["sources"] == []


@pytest.mark.parametrize("method,path,body,status,code", [
    ("POST", "/api/journal/entries", {"date": DATE, "text": "  "}, 400, "empty_text"),
    ("POST", "/api/journal/entries", {"date": "heute", "text": "x"}, 400, "invalid_date"),
    ("POST", "/api/journal/entries", {"date": DATE, "text": "x", "draft_id": "nope"}, 404,
     "not_found"),
    ("POST", "/api/journal/entries", {"date": DATE}, 400, "invalid_request"),
    ("PUT", "/api/journal/entries/nope", {"text": "x"}, 404, "not_found"),
    ("POST", "/api/journal/entries/nope/restore", {"version_id": "v"}, 404, "not_found"),
    ("GET", "/api/journal/jobs/nope", None, 404, "not_found"),
    ("GET", "/api/journal/drafts/nope", None, 404, "not_found"),
    ("GET", "/api/journal/days/2026-13-01", None, 400, "invalid_date"),
    ("GET", "/api/journal/export?format=pdf", None, 400, "invalid_format"),
    ("GET", "/api/journal/days?limit=0", None, 400, "invalid_limit"),
    ("GET", "/api/journal/days?limit=1001", None, 400, "invalid_limit"),
    ("GET", "/api/journal/days?limit=%D9%A3", None, 400, "invalid_limit"),
    ("GET", "/api/journal/days?before=gestern", None, 400, "invalid_date"),
    ("POST", f"/api/journal/days/{DATE}/drafts", {"conversation_ids": "x"}, 400,
     "invalid_request"),
])
async def test_bad_journal_requests_get_the_error_shape(client, method, path, body, status,
                                                        code):
    answer = await call(client, method, path, status, json=body)
    assert answer["error"]["code"] == code
    assert await call(client, "GET", "/api/journal/days") == []


async def test_the_days_are_paged_newest_first_by_a_date_cursor(client):
    """`GET /api/journal/days` pages by `limit` and `before`; a `Link` header names the next
    page while there are older days; without parameters a client sees up to a year of days
    as the same list as before."""
    dates = ["2026-01-05", "2026-02-01", "2026-02-02", "2026-03-10", "2026-04-01"]
    for date in dates:
        await call(client, "POST", "/api/journal/entries", 201, json={"date": date, "text": date})
    newest_first = sorted(dates, reverse=True)
    everything = await call(client, "GET", "/api/journal/days")
    assert [d["date"] for d in everything] == newest_first
    assert all(d["entry_id"] for d in everything)

    seen, path, pages = [], "/api/journal/days?limit=2", 0
    while path:
        response = await client.get(path, headers=AUTH)
        assert response.status == 200
        page = await response.json()
        assert len(page) <= 2
        seen += page
        pages += 1
        link = response.headers.get("Link")
        path = link.split(">", 1)[0].lstrip("<") if link else None
    assert pages == 3 and seen == everything
    older = await call(client, "GET", "/api/journal/days?before=2026-02-02")
    assert [d["date"] for d in older] == ["2026-02-01", "2026-01-05"]
    assert await call(client, "GET", "/api/journal/days?before=2026-01-05") == []


async def test_the_journal_needs_auth(client):
    response = await client.get("/api/journal/days")
    assert response.status == 401


async def test_another_user_sees_and_touches_nothing_of_my_journal(aiohttp_client, settings):
    from app.auth.accounts import add_user_sync
    from app.storage.migrations import apply_migrations

    conn = store_connection(settings)
    apply_migrations(conn)
    anna = {"Authorization": f"Bearer {add_user_sync(conn, 'anna', 'correct horse battery')}"}
    conn.close()
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    await import_day(client)
    job = await generate(client)
    entry = await call(client, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": "Meins.", "draft_id": job["draft_id"]})

    async def as_anna(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        response = await client.request(method, path, headers=anna, json=body)
        return response.status, await response.json() if response.content_type == \
            "application/json" else None

    assert await as_anna("GET", "/api/journal/days") == (200, [])
    status, day = await as_anna("GET", f"/api/journal/days/{DATE}")
    assert status == 200 and day["conversations"] == [] and day["entry"] is None
    for method, path, body in [
            ("GET", f"/api/journal/jobs/{job['job_id']}", None),
            ("GET", f"/api/journal/drafts/{job['draft_id']}", None),
            ("GET", f"/api/journal/entries/{entry['entry_id']}", None),
            ("PUT", f"/api/journal/entries/{entry['entry_id']}", {"text": "Ihres."}),
            ("DELETE", f"/api/journal/entries/{entry['entry_id']}", None),
            ("POST", "/api/journal/entries", {"date": DATE, "text": "x",
                                              "draft_id": job["draft_id"]})]:
        assert (await as_anna(method, path, body))[0] == 404, (method, path)
    assert (await as_anna("POST", f"/api/journal/days/{DATE}/drafts", {}))[0] == 422
    assert (await as_anna("GET", "/api/journal/export?format=json"))[1]["entries"] == []
    mine = await call(client, "GET", f"/api/journal/entries/{entry['entry_id']}")
    assert mine["text"] == "Meins." and len(mine["versions"]) == 1


async def test_a_provider_refusing_the_length_fails_the_job_with_its_code(jclient, fake_model):
    fake_model.script("journal_reconstruct", Fault.context_length())
    await import_day(jclient)
    job = await generate(jclient)
    assert job["state"] == "failed"
    assert job["error"]["code"] == "provider_context_length_rejected"
    assert (await call(jclient, "GET", "/api/journal/days"))[0]["draft_id"] is None


# --- any day: the calendar, a hand-written entry, a redraft into the entry ------------------------

async def test_a_month_of_the_calendar_lists_its_days_and_today(jclient):
    await import_day(jclient, date="2026-02-28")
    await import_day(jclient, date="2026-03-01")
    await call(jclient, "POST", "/api/journal/entries", 201,
               json={"date": "2026-03-31", "text": "Von Hand, ohne Gespräch."})
    await call(jclient, "POST", "/api/journal/entries", 201,
               json={"date": "2026-04-01", "text": "Nächster Monat."})
    month = await call(jclient, "GET", "/api/journal/months/2026-03")
    assert month["month"] == "2026-03"
    assert month["today"] == dt.datetime.now().date().isoformat()  # the machine's zone here
    assert [(d["date"], d["user_messages"], bool(d["entry_id"])) for d in month["days"]] == [
        ("2026-03-01", 3, False), ("2026-03-31", 0, True)]
    assert (await call(jclient, "GET", "/api/journal/months/2026-02"))["days"][0]["date"] == \
        "2026-02-28"
    assert month["latest"] == "2026-04-01"
    assert (await call(jclient, "GET", "/api/journal/months/1999-01"))["days"] == []
    entry = (await call(jclient, "GET", "/api/journal/days/2026-04-01"))["entry"]
    await call(jclient, "DELETE", f"/api/journal/entries/{entry['entry_id']}", 204)
    assert (await call(jclient, "GET", "/api/journal/months/2026-03"))["latest"] == "2026-03-31"
    for bad in ("2026-13", "2026-3", "march", "2026-00", "0000-01"):
        answer = await call(jclient, "GET", f"/api/journal/months/{bad}", 400)
        assert answer["error"]["code"] == "invalid_month", bad


async def test_an_entry_for_a_day_without_any_conversation_is_written_by_hand(jclient):
    entry = await call(jclient, "POST", "/api/journal/entries", 201,
                       json={"date": "2025-12-24", "text": "Heiligabend bei den Eltern."})
    [version] = entry["versions"]
    assert version["origin"] == "edit" and version["sources"] == [] and not version["draft_id"]
    day = await call(jclient, "GET", "/api/journal/days/2025-12-24")
    assert day["conversations"] == [] and day["entry"]["text"] == "Heiligabend bei den Eltern."
    [listed] = await call(jclient, "GET", "/api/journal/days")
    assert (listed["date"], listed["messages"], listed["entry_id"]) == (
        "2025-12-24", 0, entry["entry_id"])
    # Such a day has nothing to draft from, with or without its entry as the base.
    for body in ({}, {"include_existing": True}):
        refused = await call(jclient, "POST", "/api/journal/days/2025-12-24/drafts", 422,
                             json=body)
        assert refused["error"]["code"] == "no_user_sources"


async def test_a_new_draft_becomes_the_entrys_next_version(jclient, fake_model):
    fake_model.script("journal_generate", "Erster Entwurf.", "Zweiter Entwurf.")
    await import_day(jclient)
    first = await generate(jclient)
    entry = await call(jclient, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": "Erster Entwurf.",
                             "draft_id": first["draft_id"]})
    await call(jclient, "PUT", f"/api/journal/entries/{entry['entry_id']}",
               json={"text": "Von Hand verbessert."})
    await import_day(jclient, [{"role": "user", "text": "Nachts noch Sterne geschaut."}])
    second = await generate(jclient)
    taken = await call(jclient, "PUT", f"/api/journal/entries/{entry['entry_id']}",
                       json={"text": "Zweiter Entwurf.", "draft_id": second["draft_id"]})
    assert [(v["origin"], v["text"]) for v in taken["versions"]] == [
        ("draft", "Erster Entwurf."), ("edit", "Von Hand verbessert."),
        ("draft", "Zweiter Entwurf.")]
    newest = taken["versions"][-1]
    assert newest["draft_id"] == second["draft_id"]
    assert taken["current_version_id"] == newest["version_id"]
    draft = await call(jclient, "GET", f"/api/journal/drafts/{second['draft_id']}")
    assert newest["sources"] == [{"conversation_id": s["conversation_id"],
                                  "message_id": s["message_id"]} for s in draft["sources"]]
    assert len(newest["sources"]) == 4
    # A draft of another day is not this entry's.
    await import_day(jclient, date="2026-03-02")
    other = await generate(jclient, "2026-03-02")
    wrong = await call(jclient, "PUT", f"/api/journal/entries/{entry['entry_id']}", 404,
                       json={"text": "x", "draft_id": other["draft_id"]})
    assert wrong["error"]["code"] == "not_found"
    assert len((await call(jclient, "GET", f"/api/journal/entries/{entry['entry_id']}"))[
        "versions"]) == 3


async def test_include_existing_revises_the_entry_else_a_leftover_draft(jclient, fake_model):
    """Seed 004 `include_existing`: off by default; on, the stored entry version is the
    base, a leftover draft only when there is no entry. The base reaches stage 2 only (in
    the artifact, with the rule to revise it); stage 1 and its validation stay the day's."""
    fake_model.script("journal_reconstruct", valid_reconstruction(), valid_reconstruction(),
                      valid_reconstruction(), valid_reconstruction())
    fake_model.script("journal_generate", "Ich bin aufgestanden.", "Ich war müde.",
                      "Ich habe gelesen.", "Am Abend habe ich mit Tom gelesen.")
    await import_day(jclient)
    first = await draft_of(jclient, await generate(jclient, include_existing=True))
    assert first["base"] is None  # nothing stored yet: written anew
    assert stage_two_input(fake_model)["base"] is None
    fake_model.requests.clear()

    plain = await draft_of(jclient, await generate(jclient))  # off by default
    assert plain["base"] is None and stage_two_input(fake_model)["base"] is None
    fake_model.requests.clear()

    on_draft = await draft_of(jclient, await generate(jclient, include_existing=True))
    assert on_draft["base"] == {"origin": "draft", "id": plain["draft_id"]}
    assert stage_two_input(fake_model)["base"] == {"origin": "draft", "text": "Ich war müde."}
    fake_model.requests.clear()

    entry = await call(jclient, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": "Mein Eintrag, mit Tom am Abend."})
    on_entry = await draft_of(jclient, await generate(jclient, include_existing=True))
    assert on_entry["base"] == {"origin": "entry", "id": entry["current_version_id"]}
    [narrate] = fake_model.chats("journal_generate")
    artifact = json.loads(narrate.messages[-1]["content"])
    assert artifact["base"] == {"origin": "entry", "text": "Mein Eintrag, mit Tom am Abend."}
    system = " ".join(narrate.messages[0]["content"].split())
    assert "Revise it rather than starting anew" in system
    [reconstruct] = fake_model.chats("journal_reconstruct")
    assert "Tom" not in json.dumps(reconstruct.body, ensure_ascii=False)  # never in stage 1
    assert on_entry["reconstruction_status"] == "valid" and on_entry["validation"] == []
    # The budget measured stage 2's prompt with the base in it.
    assert on_entry["trace"]["estimated_input"][1] > plain["trace"]["estimated_input"][1] + 10
    # The entry itself is untouched until the user takes the draft over.
    again = await call(jclient, "GET", f"/api/journal/entries/{entry['entry_id']}")
    assert again["text"] == "Mein Eintrag, mit Tom am Abend." and len(again["versions"]) == 1


async def test_an_evidence_from_the_base_is_not_the_days(jclient, fake_model):
    """The base is the user's text but not a line of the day: a claim quoting it is
    `evidence_not_verbatim`, and the draft falls back to the day's lines (with the base)."""
    await call(jclient, "POST", "/api/journal/entries", 201,
               json={"date": DATE, "text": "Mit Tom im Kino gewesen."})
    await import_day(jclient)
    quoting = valid_reconstruction()
    quoting["chronology"][1]["claims"].append({"kind": "event", "evidence": "Mit Tom im Kino"})
    fake_model.script("journal_reconstruct", quoting)
    draft = await draft_of(jclient, await generate(jclient, include_existing=True))
    assert draft["reconstruction_status"] == "fallback"
    assert "evidence_not_verbatim" in draft["validation"]
    assert stage_two_input(fake_model)["base"]["text"] == "Mit Tom im Kino gewesen."


@pytest.mark.parametrize("body", [{"include_existing": "yes"}, {"language": 5}])
async def test_a_bad_draft_request_is_refused(jclient, body):
    await import_day(jclient)
    answer = await call(jclient, "POST", f"/api/journal/days/{DATE}/drafts", 400, json=body)
    assert answer["error"]["code"] == "invalid_request"


async def test_drafts_from_before_the_marks_read_as_they_were(tmp_path):
    """m009_journal_marks on a database with drafts: every ref is a told line, no draft
    revised anything, and the log's lines are not done."""
    from app.journal.models import DraftSource
    from app.journal.rows import draft_of, draft_refs
    from app.storage.migrations import apply_migrations
    from tests.migrations_support import database_before

    conn = database_before(tmp_path / "old.sqlite3", "m009_journal_marks")
    with conn:
        conn.execute("INSERT INTO journal_spaces VALUES ('s', 'local', 'user', 0)")
        conn.execute("INSERT INTO journal_days VALUES ('d', 's', '2026-03-01', '{}', 0)")
        conn.execute("INSERT INTO journal_drafts (draft_id, journal_day_id, text, status, "
                     "reconstruction_status, narration, created_at) "
                     "VALUES ('r', 'd', 'Alt.', 'current', 'valid', 'model', 0)")
        conn.execute("INSERT INTO journal_draft_source_refs VALUES ('r', 0, 'u1', 'c', 'm')")
    assert apply_migrations(conn)[0] == "m009_journal_marks"  # and the later ones
    row = conn.execute("SELECT r.*, d.calendar_date FROM journal_drafts r JOIN journal_days d "
                       "ON d.day_id = r.journal_day_id").fetchone()
    draft = draft_of(row, draft_refs(conn, "r"))
    assert draft.base is None and draft.sources == [
        DraftSource(message_id="m", source_id="u1", conversation_id="c", act=None)]
    conn.close()


async def test_a_day_of_only_requests_and_questions_still_gives_an_offline_draft(client):
    await import_day(client, [{"role": "user", "text": "Wie spät ist es?"},
                              {"role": "user", "text": "Und morgen?"}])
    draft = await draft_of(client, await generate(client, language="de"))
    assert draft["text"] == DATE  # nothing told: the date, no line in the prose
    assert [s["act"] for s in draft["sources"]] == ["question", "question"]
    assert draft["trace"]["stages"][1]["outcome"] == "offline"
