"""Evidence signals (issue 16 item 3): local, no model. A saved entry and a strong edit of a
generated draft are review candidates; an unedited draft never is; dialog samples come with a
cooldown and drop out once entries exist."""

from __future__ import annotations

import time

from app.api.app_keys import DB
from tests.conftest import AUTH
from tests.waiting import wait_job

DAY = "2026-03-04"


async def _confirm(client) -> None:
    await client.put("/api/profile/core", headers=AUTH, json={"value": "Knapp."})


async def _evidence(client) -> list[dict]:
    return (await (await client.get("/api/profile/evidence", headers=AUTH)).json())["evidence"]


async def _draft(client) -> dict:
    await client.post("/api/journal/import", headers=AUTH, json={"date": DAY, "messages": [
        {"role": "user", "text": "Am Morgen war ich auf dem Markt und habe Brot gekauft."}]})
    job_id = (await (await client.post(f"/api/journal/days/{DAY}/drafts",
                                       headers=AUTH)).json())["job_id"]
    job = await wait_job(client, job_id)
    assert job["state"] == "done", job
    return await (await client.get(f"/api/journal/drafts/{job['draft_id']}",
                                   headers=AUTH)).json()


async def test_an_unedited_draft_is_no_source_and_a_strong_edit_is(client):
    await _confirm(client)
    draft = await _draft(client)
    response = await client.post("/api/journal/entries", headers=AUTH, json={
        "date": DAY, "text": draft["text"], "draft_id": draft["draft_id"]})
    entry = await response.json()
    assert await _evidence(client) == []  # saved as generated: not the user's voice
    package = (await (await client.get("/api/profile/package?mode=initial_build",
                                       headers=AUTH)).json())["package"]
    assert package["evidence"] == []

    await client.put(f"/api/journal/entries/{entry['entry_id']}", headers=AUTH, json={
        "text": "Morgens Markt. Brot, warm noch, in der Jackentasche heimgetragen."})
    found = await _evidence(client)
    assert [e["signal"] for e in found] == ["strong_edit"]
    assert found[0]["measure"]["edit_share"] >= 0.3
    assert found[0]["text"].startswith("Morgens Markt.")


async def test_a_light_edit_is_no_strong_edit(client):
    await _confirm(client)
    draft = await _draft(client)
    entry = await (await client.post("/api/journal/entries", headers=AUTH, json={
        "date": DAY, "text": draft["text"], "draft_id": draft["draft_id"]})).json()
    await client.put(f"/api/journal/entries/{entry['entry_id']}", headers=AUTH,
                     json={"text": draft["text"] + "!"})
    # Saved, it is the first candidate by periodic readiness (`test_evidence_at_save`), and
    # its small edit share is measured, not read as a strong edit.
    found = await _evidence(client)
    assert [e["signal"] for e in found] == ["periodic"]
    assert found[0]["measure"]["edit_share"] < 0.3


async def _chat(client, rows: list[tuple[float, str]]) -> None:
    def write(conn):
        for index, (created, text) in enumerate(rows):
            conn.execute("INSERT INTO messages (entry_key, user_id, character_id, turn_id, "
                         "role, text, created, calendar_date) VALUES (?, 'local', 'nova', ?, "
                         "'user', ?, ?, '2026-03-01')", (f"k{index}", f"t{index}", text, created))

    await client.app[DB].execute_write_fn(write)


async def test_dialog_samples_have_a_cooldown_and_drop_out_once_entries_exist(client):
    await _confirm(client)
    now = time.time()
    long_text = "Ich erzähle gern ausführlich, wie mein Tag war. " * 10
    await _chat(client, [(now - 7200, long_text + "eins"), (now - 3600, long_text + "zwei"),
                         (now - 60, "kurz"), (now - 90000 - 7200, long_text + "alt")])
    found = await _evidence(client)
    # One sample per day (cooldown); the short message is no sample.
    assert [e["signal"] for e in found] == ["dialog_sample", "dialog_sample"]
    assert [e["text"][-4:] for e in found] == ["eins", " alt"]
    # Once the user has an entry of their own, dialog is no longer a voice.
    await client.post("/api/journal/entries", headers=AUTH, json={
        "date": "2026-03-02", "text": "Selbst geschrieben, mein Ton."})
    package = (await (await client.get("/api/profile/package?mode=initial_build",
                                       headers=AUTH)).json())["package"]
    assert [e["kind"] for e in package["evidence"]] == ["entry"]


async def test_a_review_is_due_after_enough_new_candidates_and_not_after_a_review(client):
    await _confirm(client)
    for day in range(1, 6):
        await client.post("/api/journal/entries", headers=AUTH, json={
            "date": f"2026-02-0{day}", "text": f"Eigener Eintrag Nummer {day}."})
    body = await (await client.get("/api/profile/evidence", headers=AUTH)).json()
    assert (body["new_since_review"], body["review_due"]) == (5, True)
    await client.post("/api/profile/results", headers=AUTH, json={
        "kind": "kansho.profile_analysis_result", "format_version": 1, "mode": "review",
        "changes": [{"action": "add", "key": "humor", "value": "trocken"}]})
    body = await (await client.get("/api/profile/evidence", headers=AUTH)).json()
    assert (body["new_since_review"], body["review_due"]) == (0, False)
    # A review carries what is new since the last one (all candidates while none is).
    package = (await (await client.get("/api/profile/package?mode=review",
                                       headers=AUTH)).json())["package"]
    assert len(package["evidence"]) == 5
    await client.post("/api/journal/entries", headers=AUTH, json={
        "date": "2026-02-09", "text": "Ganz neuer eigener Eintrag."})
    package = (await (await client.get("/api/profile/package?mode=review",
                                       headers=AUTH)).json())["package"]
    assert [e["text"] for e in package["evidence"]] == ["Ganz neuer eigener Eintrag."]
    assert package["evidence"][0]["ref"].startswith("ev_")


async def test_imported_conversations_are_dialog_samples_too(client):
    await _confirm(client)
    long_text = "Im Urlaub habe ich jeden Abend lange Tagebuch geschrieben, am Meer. " * 8
    response = await client.post("/api/journal/import", headers=AUTH, json={
        "date": "2025-08-10", "messages": [{"role": "user", "text": long_text},
                                           {"role": "assistant", "text": long_text}]})
    assert response.status == 201
    found = await _evidence(client)
    assert [(e["signal"], e["context_hint"]) for e in found] == [
        ("dialog_sample", "imported conversation of 2025-08-10")]
    assert found[0]["ref"].startswith("message:msg_")
