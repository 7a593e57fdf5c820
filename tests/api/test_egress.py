"""What left this machine (issue 39 item 5, `app.llm.egress_log`, `app.api.egress`) through
the real server, the real store and the fake model server as the endpoint: a day of messages
full of registered names leaves rows that hold no name, no placeholder and no prompt text,
and whose counts are the gateway's; a local endpoint's calls are listed, marked local, with
nothing masked; a refused reply says so; bad input gets the error shape; the user clears
their own rows only; the rows are in a backup and come back with a restore."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import threading
import time

import pytest

from app.api.app_keys import DB, EGRESS_LOG, GATEWAY, SETTINGS
from app.llm.egress_log import EXPORT_COLUMNS, EgressCall, endpoint_of
from app.wiring.cli import main
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.pipeline_support import fake_app, open_chat
from tests.runtime_support import runtime_app

PEOPLE = [{"name": "Annegret Wolkenstein", "aliases": ["Anne"]}, {"name": "Onkel Bertram"},
          {"name": "Frau Dr. Özdemir", "aliases": []}]
NAMES = ["annegret", "wolkenstein", "anne", "bertram", "özdemir"]
DAY_OF_MESSAGES = [
    "Annegret Wolkenstein war heute morgen da, Anne bringt Kuchen.",
    "Onkel Bertram rief an: 0170/1234567, er wohnt in der Lindenstraße 12, 04109 Leipzig.",
    "Frau Dr. Özdemir hat meine IBAN DE89 3704 0044 0532 0130 00 gebraucht.",
    "Ich habe Anne und Onkel Bertram zum Kaffee eingeladen, schreib an anne@example.org.",
]
PROMPT_WORDS = ["kuchen", "kaffee", "lindenstraße", "leipzig", "gebraucht", "eingeladen",
                "morgen", "example.org", "1234567"]


async def raw_rows(app) -> list[dict]:
    """Every row of the table, every column, as the store holds it."""
    await app[EGRESS_LOG].flush()

    def read(conn):
        cursor = conn.execute("SELECT * FROM egress_log ORDER BY at")
        return [dict(zip(row.keys(), tuple(row), strict=True)) for row in cursor.fetchall()]

    return await app[DB].execute_fn(read)


async def test_a_day_of_registered_names_leaves_no_identity_in_the_table(
        fake_model, make_settings, aiohttp_client):
    fake_model.default_text = "Schön, dass [PERSON_1] da war."
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, llm_remote=True))
    put = await chat.client.put("/api/privacy/identities", json={"people": PEOPLE}, headers=AUTH)
    assert put.status == 200
    for text in DAY_OF_MESSAGES:
        await chat.response(await chat.send(text))
    await chat.settle()

    rows = await raw_rows(chat.app)
    requests = fake_model.chats()
    assert len(rows) == len(requests) >= len(DAY_OF_MESSAGES)  # one row per call, no retry ran
    stored = json.dumps(rows, ensure_ascii=False).casefold()
    for secret in NAMES + PROMPT_WORDS:
        assert secret not in stored, secret
    values = [str(value) for row in rows for value in row.values()]
    assert not [v for v in values if re.search(r"\[|[A-Z]+_[0-9]", v)]  # no placeholder
    assert "test-token" not in stored and TOKEN.casefold() not in stored
    # Nothing else: the row's columns are counts, machine names and the call's bookkeeping.
    assert set(rows[0]) == {"call_id", "user_id", "at", "calendar_date", "purpose", "provider",
                            "endpoint", "model", "remote", "tokens_in", "tokens_out",
                            "masked_json", "refused", "outcome", "error_code"}
    assert {row["endpoint"] for row in rows} == {endpoint_of(fake_model.url)}
    assert all(row["remote"] == 1 and row["user_id"] == "local" for row in rows)
    assert all(row["tokens_in"] > 0 and row["tokens_out"] > 0 for row in rows)

    # The counts are the gateway's: every masked identity, by kind.
    stats = await chat.get("/api/privacy/stats")
    by_kind: dict[str, int] = {}
    for row in rows:
        for kind, count in json.loads(row["masked_json"]).items():
            by_kind[kind] = by_kind.get(kind, 0) + count
    assert by_kind == {k: n for k, n in stats["values_masked"].items() if n}
    assert stats["calls_masked"] == len(rows)
    assert {"PERSON", "PHONE", "ADDRESS", "IBAN", "EMAIL"} <= set(by_kind)

    day = await chat.get("/api/privacy/egress")
    assert day["day"] == chat.app[EGRESS_LOG].today()
    summary = day["summary"]
    assert summary["calls"] == summary["remote_calls"] == len(rows)
    assert summary["masked"] == by_kind
    assert summary["refused"] == {"gate": 0, "reply": 0}
    assert summary["endpoints"] == [{"endpoint": endpoint_of(fake_model.url),
                                     "provider": "openai", "remote": True, "calls": len(rows)}]
    assert summary["tokens_in"] == sum(row["tokens_in"] for row in rows)
    assert len(day["calls"]) == len(rows) and day["next_offset"] is None
    assert day["calls"][0]["at"] >= day["calls"][-1]["at"]  # newest first
    # Paged, and filtered by purpose.
    page = await chat.get("/api/privacy/egress?limit=2&offset=1")
    assert [c["at"] for c in page["calls"]] == [c["at"] for c in day["calls"][1:3]]
    assert page["next_offset"] == (3 if len(rows) > 3 else None)
    purpose = day["purposes"][0]
    only = await chat.get(f"/api/privacy/egress?purpose={purpose}")
    assert only["calls"] and all(c["purpose"] == purpose for c in only["calls"])
    assert only["summary"]["calls"] == sum(1 for r in rows if r["purpose"] == purpose)
    await chat.close()


async def test_a_local_endpoint_is_listed_marked_local_with_nothing_masked(
        fake_model, make_settings, aiohttp_client):
    fake_model.default_text = "Hallo!"
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    await chat.client.put("/api/privacy/identities", json={"people": PEOPLE}, headers=AUTH)
    await chat.response(await chat.send(DAY_OF_MESSAGES[0]))
    await chat.settle()
    rows = await raw_rows(chat.app)
    assert rows and len(rows) == len(fake_model.chats())
    assert all(row["remote"] == 0 and row["masked_json"] == "{}" for row in rows)
    assert "wolkenstein" not in json.dumps(rows).casefold()
    day = await chat.get("/api/privacy/egress")
    assert day["summary"]["remote_calls"] == 0 and day["summary"]["masked"] == {}
    assert day["summary"]["endpoints"][0]["remote"] is False
    await chat.close()


async def test_a_refused_reply_is_a_row_that_says_the_reply_check_refused(
        fake_model, make_settings, aiohttp_client):
    fake_model.default_text = "Hallo Annegret!"
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings,
                                                       llm_remote=True))
    await chat.client.put("/api/privacy/identities", json={"names": ["Annegret"]}, headers=AUTH)
    failed = await chat.failure(await chat.send("Ich bin Annegret."))
    await chat.settle()
    assert failed["reason"] == "privacy_blocked"
    rows = await raw_rows(chat.app)
    refused = [row for row in rows if row["refused"]]
    assert [(r["refused"], r["outcome"], r["error_code"]) for r in refused] == [
        ("reply", "error", "privacy_blocked")]
    assert "annegret" not in json.dumps(rows).casefold()
    day = await chat.get("/api/privacy/egress")
    assert day["summary"]["refused"] == {"gate": 0, "reply": 1}
    await chat.close()


def call(user_id: str, at: float, purpose: str = "responder", **more) -> EgressCall:
    fields = {"provider": "openai", "endpoint": "openrouter.ai", "model": "m", "remote": True,
              "tokens_in": 10, "tokens_out": 5, "masked": {"PERSON": 2}, "refused": None,
              "outcome": "ok", "error_code": None, **more}
    return EgressCall(user_id=user_id, at=at, purpose=purpose, **fields)


@pytest.mark.parametrize(("query", "code"), [
    ("day=2026-13-01", "invalid_day"), ("day=20260101", "invalid_day"),
    ("day=yesterday", "invalid_day"), ("day=", "invalid_day"),
    ("purpose=nonsense", "invalid_purpose"), ("purpose=Responder", "invalid_purpose"),
    ("limit=0", "invalid_limit"), ("limit=501", "invalid_limit"), ("limit=x", "invalid_limit"),
    ("offset=-1", "invalid_offset"), ("offset=１", "invalid_offset"),
])
async def test_bad_input_gets_the_error_shape(client, query, code):
    response = await client.get(f"/api/privacy/egress?{query}", headers=AUTH)
    assert response.status == 400
    body = await response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code and body["error"]["message"]


@pytest.mark.parametrize(("query", "code"), [
    ("format=xml", "invalid_format"), ("day=2026-02-30", "invalid_day"),
    ("purpose=x", "invalid_purpose")])
async def test_a_bad_export_gets_the_error_shape(client, query, code):
    response = await client.get(f"/api/privacy/egress/export?{query}", headers=AUTH)
    assert response.status == 400
    assert (await response.json())["error"]["code"] == code


async def test_without_a_login_nothing_is_shown_or_cleared(client):
    client.app[EGRESS_LOG].note(call("local", time.time()))
    for method in ("GET", "DELETE"):
        response = await client.request(method, "/api/privacy/egress")
        assert response.status == 401
    assert len(await raw_rows(client.app)) == 1


async def test_export_streams_json_and_csv_and_clear_deletes_only_the_users_own(client):
    log = client.app[EGRESS_LOG]
    now = time.time()
    log.note(call("local", now - 2, "responder"))
    log.note(call("local", now - 1, "perception", masked={}, refused="gate", outcome="error",
                  error_code="privacy_blocked"))
    log.note(call("bob", now, "responder"))
    response = await client.get("/api/privacy/egress/export", headers=AUTH)
    assert response.status == 200 and response.content_type == "application/json"
    assert "attachment" in response.headers["Content-Disposition"]
    exported = await response.json()
    assert [c["purpose"] for c in exported] == ["responder", "perception"]  # oldest first
    assert endpoint_of("https://user:pw@[::1]:8443/v1?key=x") == "[::1]:8443"
    assert endpoint_of("https://openrouter.ai/api/v1") == "openrouter.ai"
    assert exported[1]["refused"] == "gate" and exported[0]["masked"] == {"PERSON": 2}
    response = await client.get("/api/privacy/egress/export?format=csv&purpose=responder",
                                headers=AUTH)
    assert response.content_type == "text/csv"
    lines = list(csv.reader(io.StringIO(await response.text())))
    assert lines[0] == list(EXPORT_COLUMNS) and len(lines) == 2
    assert dict(zip(EXPORT_COLUMNS, lines[1], strict=True))["masked"] == "PERSON=2"
    # A purpose the rows hold is a filter even where the app does not list it.
    log.note(call("local", now - 3, "a_later_purpose"))
    found = await (await client.get("/api/privacy/egress?purpose=a_later_purpose",
                                    headers=AUTH)).json()
    assert [c["purpose"] for c in found["calls"]] == ["a_later_purpose"]
    days = await (await client.get("/api/privacy/egress/days", headers=AUTH)).json()
    assert days == {"days": [{"day": log.today(), "calls": 3}]}

    response = await client.delete("/api/privacy/egress", headers=AUTH)
    assert await response.json() == {"deleted": 3}
    day = await (await client.get("/api/privacy/egress", headers=AUTH)).json()
    assert day["summary"]["calls"] == 0 and day["calls"] == []
    assert [row["user_id"] for row in await raw_rows(client.app)] == ["bob"]


@pytest.mark.own_redis  # a backup BGSAVEs the data dir's own Redis (tests/conftest.py)
async def test_the_log_is_in_a_backup_and_comes_back_with_a_restore(
        make_settings, aiohttp_client, data_dir, capsys):
    app = create_app(make_settings(llm_provider="offline"), local_token=TOKEN)
    client = await aiohttp_client(app)
    app[EGRESS_LOG].note(call("local", 1_800_000_000.0, masked={"PERSON": 3, "PHONE": 1}))
    before = await (await client.get("/api/privacy/egress?day=2027-01-15", headers=AUTH)).json()
    assert before["summary"]["calls"] == 1
    response = await client.post("/api/backups", headers=AUTH)
    assert response.status == 201, await response.text()
    made = await response.json()
    assert (await client.delete("/api/privacy/egress", headers=AUTH)).status == 200
    await client.close()

    assert main(["--data-dir", str(data_dir), "restore", made["path"], "--yes"]) == 0
    capsys.readouterr()
    restarted = create_app(app[SETTINGS], local_token=TOKEN)
    client = await aiohttp_client(restarted)
    after = await (await client.get("/api/privacy/egress?day=2027-01-15", headers=AUTH)).json()
    assert after == before
    await client.close()


async def test_the_local_detect_role_is_listed_local_beside_the_remote_calls(
        fake_model, make_settings, aiohttp_client):
    # The fake serves both: the remote provider (llm_remote) and the local detect server.
    fake_model.always("privacy_detect", {"names": ["Zoltan"]})
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, llm_remote=True,
                                                    privacy_detect_url=fake_model.url))
    await chat.response(await chat.send("Zoltan war heute hier."))
    await chat.settle()
    rows = await raw_rows(chat.app)
    detect = [row for row in rows if row["purpose"] == "privacy_detect"]
    remote = [row for row in rows if row["remote"]]
    assert detect and len(detect) == len(fake_model.chats("privacy_detect")) == len(remote)
    assert all(row["remote"] == 0 and row["masked_json"] == "{}" for row in detect)
    assert all(json.loads(row["masked_json"]).get("PERSON") for row in remote)
    assert "zoltan" not in json.dumps(rows).casefold()
    only = await chat.get("/api/privacy/egress?purpose=privacy_detect")
    assert only["summary"]["calls"] == len(detect)
    await chat.close()


async def test_a_call_does_not_wait_for_the_log_to_be_written(
        fake_model, make_settings, aiohttp_client):
    """Off the turn's path: with the store's one writer held, a model call still completes
    (its row waits in memory) and is written once the writer is free."""
    client = await aiohttp_client(fake_app(fake_model, make_settings))
    app = client.app
    release = threading.Event()
    held = asyncio.ensure_future(app[DB].execute_write_fn(lambda conn: release.wait(30)))
    try:
        async with asyncio.timeout(10):
            result = await app[GATEWAY].complete(
                "responder", [{"role": "user", "content": "Hallo"}], max_tokens=50,
                user_id="local")
        assert result.text
        assert not held.done()  # the call completed while the writer was still held
    finally:
        release.set()
        await held
    rows = await raw_rows(app)
    assert [(r["purpose"], r["outcome"], r["remote"]) for r in rows] == [("responder", "ok", 0)]
