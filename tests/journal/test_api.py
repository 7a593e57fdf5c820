"""The journal through the real server (SPEC §8, §9): real SQLite, real Redis, the scripted
fake model over HTTP (`tests/fakemodel.py`), the offline model, the WebSocket."""

from __future__ import annotations

import json
import sqlite3
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
from app.wiring.server import DATABASE_FILE, create_app
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import UNNAMED, Fault
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
               **kwargs: Any) -> Any:
    response = await client.request(method, path, headers=AUTH, **kwargs)
    body = await response.text()
    assert response.status == status, (response.status, body)
    return json.loads(body) if body and response.content_type == "application/json" else body


async def import_day(client: TestClient, lines: list[dict[str, Any]] = LINES,
                     date: str = DATE) -> dict[str, Any]:
    return await call(client, "POST", "/api/journal/import", 201,
                      json={"date": date, "messages": lines})


async def generate(client: TestClient, date: str = DATE, **body: Any) -> dict[str, Any]:
    started = await call(client, "POST", f"/api/journal/days/{date}/drafts", 202,
                         json=body or None)
    return await wait_job(client, started["job_id"])


async def draft_of(client: TestClient, job: dict[str, Any]) -> dict[str, Any]:
    assert job["state"] == "done", job
    return await call(client, "GET", f"/api/journal/drafts/{job['draft_id']}")


def stage_two_input(fake_model) -> dict[str, Any]:
    [request] = fake_model.chats("journal_generate")
    return json.loads(request.messages[-1]["content"])


# --- import --------------------------------------------------------------------------------------

async def test_import_stores_a_day_and_lists_it(jclient):
    imported = await import_day(jclient)
    assert len(imported["message_ids"]) == len(LINES)
    days = await call(jclient, "GET", "/api/journal/days")
    assert days == [{"date": DATE, "messages": 5, "user_messages": 3, "entry_id": None,
                     "draft_id": None}]
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


async def test_the_fallbacks_stage_two_prompt_is_the_one_the_budget_measured(jclient,
                                                                              fake_model):
    fake_model.script("journal_reconstruct", "not json", "not json")
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    [sent] = fake_model.chats("journal_generate")
    measured = budgeting.estimate_tokens(sent.messages, jclient.app[SETTINGS].chars_per_token)
    assert draft["trace"]["estimated_input"][1] == measured


TRACE_KEYS = ["provider", "model", "window_source", "window", "margin", "margin_tokens",
              "reserved_output", "estimated_input", "budget_ok", "prompt_tokens",
              "completion_tokens", "stages"]
STAGE_KEYS = ["stage", "outcome", "codes", "ms", "prompt_tokens", "completion_tokens"]


async def test_a_drafts_trace_is_stored_as_it_always_was(jclient, fake_model, data_dir):
    fake_model.script("journal_reconstruct", valid_reconstruction())
    await import_day(jclient)
    draft = await draft_of(jclient, await generate(jclient))
    with sqlite3.connect(data_dir / DATABASE_FILE) as conn:
        [(raw,)] = conn.execute("SELECT trace_json FROM journal_drafts").fetchall()
    stored = json.loads(raw)
    # Keys in this order, in the stdlib's JSON layout the first version wrote.
    assert list(stored) == TRACE_KEYS and raw == json.dumps(stored)
    assert [list(stage) for stage in stored["stages"]] == [STAGE_KEYS, STAGE_KEYS]
    assert stored == draft["trace"]


async def test_a_trace_written_by_an_earlier_version_reads_as_written(jclient, data_dir):
    await import_day(jclient)
    job = await generate(jclient)
    earlier = ('{"provider": "openai", "model": "fake", "window_source": "provider", '
               '"window": 32768, "margin": 0.15, "margin_tokens": 4916, "reserved_output": '
               '4096, "estimated_input": [789, 477], "budget_ok": true, "prompt_tokens": null, '
               '"completion_tokens": null, "stages": [{"stage": "reconstruct", "outcome": '
               '"fallback", "codes": ["reconstruction_invalid", "privacy_blocked"], "ms": '
               '12.5, "prompt_tokens": null, "completion_tokens": null}], "later_key": 1}')
    with sqlite3.connect(data_dir / DATABASE_FILE) as conn:
        conn.execute("UPDATE journal_drafts SET trace_json = ?", (earlier,))
    draft = await call(jclient, "GET", f"/api/journal/drafts/{job['draft_id']}")
    assert draft["trace"] == json.loads(earlier)


async def test_a_day_without_user_text_is_refused_and_no_request_is_sent(jclient, fake_model):
    await import_day(jclient, [{"role": "assistant", "text": "Hallo?"}])
    answer = await call(jclient, "POST", f"/api/journal/days/{DATE}/drafts", 422)
    assert answer["error"]["code"] == "no_user_sources"
    await call(jclient, "POST", "/api/journal/days/2026-01-01/drafts", 422)
    assert fake_model.chats() == []


async def test_a_day_over_budget_fails_before_any_request(jclient, fake_model):
    # usable 27852 - 4096 reserved = 23756 tokens = 47512 chars: three 20 000-char lines
    await import_day(jclient, [{"role": "user", "text": f"{i} " + "Wort " * 3999}
                               for i in range(3)])
    job = await generate(jclient)
    assert job["state"] == "failed" and job["error"]["code"] == "prompt_budget_exceeded"
    assert "nothing was cut" in job["error"]["message"]
    assert fake_model.chats() == []
    assert (await call(jclient, "GET", "/api/journal/days"))[0]["draft_id"] is None


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
                # One of the WebSocket messages of SPEC §9, in the layout it always had.
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


async def test_a_failed_jobs_progress_names_its_error(jclient, fake_model):
    await import_day(jclient, [{"role": "user", "text": f"{i} " + "Wort " * 3999}
                               for i in range(3)])
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
                                                                        fake_model, data_dir):
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
    with sqlite3.connect(data_dir / DATABASE_FILE) as conn:
        state, code = conn.execute("SELECT state, error_code FROM journal_jobs").fetchone()
    assert (state, code) == ("failed", "interrupted")


async def test_a_job_left_open_by_a_dead_process_is_failed_at_start(aiohttp_client,
                                                                    journal_app, data_dir):
    first = await aiohttp_client(journal_app())
    await first.close()
    with sqlite3.connect(data_dir / DATABASE_FILE) as conn:  # as a killed process leaves it
        conn.execute("INSERT INTO journal_jobs VALUES ('job_dead', 'local', ?, 'narrate', NULL, "
                     "NULL, NULL, 1, 1)", (DATE,))
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
    assert draft["narration"] == "model"
    assert all(line in draft["text"] for line in USER_LINES)
    assert not any(line in draft["text"] for line in ASSISTANT_LINES)


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
    ("POST", f"/api/journal/days/{DATE}/drafts", {"conversation_ids": "x"}, 400,
     "invalid_request"),
])
async def test_bad_journal_requests_get_the_error_shape(client, method, path, body, status,
                                                        code):
    answer = await call(client, method, path, status, json=body)
    assert answer["error"]["code"] == code
    assert await call(client, "GET", "/api/journal/days") == []


async def test_the_journal_needs_auth(client):
    response = await client.get("/api/journal/days")
    assert response.status == 401


async def test_another_user_sees_and_touches_nothing_of_my_journal(aiohttp_client, settings):
    from app.auth.accounts import add_user_sync
    from app.storage.database import connect
    from app.storage.migrations import apply_migrations

    conn = connect(settings.data_path / DATABASE_FILE)
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
