"""Stage 2 of the journal gets the writing profile's compiled brief (issue 16 item 5), seen in
the request body the fake model server received."""

from __future__ import annotations

import pytest

from app.profiles.writing.brief import DEFAULT_BRIEF
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.waiting import wait_job

DAY = "2026-03-04"
LINES = ["Heute früh um 6:00 Uhr bin ich mit dem Rad zum Markt gefahren.",
         "Anna hat mir Brot mitgebracht, und wir haben Suppe gekocht."]


@pytest.fixture
async def model_client(fake_model, make_settings, aiohttp_client):
    fake_model.context_length = 65536
    settings = make_settings(**fake_model.overrides(llm_context=65536))
    return await aiohttp_client(create_app(settings, local_token=TOKEN))


async def _generate(client) -> None:
    response = await client.post("/api/journal/import", headers=AUTH, json={
        "date": DAY, "messages": [{"role": "user", "text": t} for t in LINES]})
    assert response.status == 201
    response = await client.post(f"/api/journal/days/{DAY}/drafts", headers=AUTH)
    assert response.status == 202
    job = await wait_job(client, (await response.json())["job_id"])
    assert job["state"] == "done", job["error"]


def _system_of_stage2(fake_model) -> str:
    requests = fake_model.chats("journal_generate")
    assert requests, "stage 2 was never called"
    messages = requests[-1].body["messages"]
    assert messages[0]["role"] == "system"
    return messages[0]["content"]


async def test_stage2_gets_the_default_brief_while_the_profile_is_uninitialized(
        fake_model, model_client):
    await _generate(model_client)
    assert _system_of_stage2(fake_model) == DEFAULT_BRIEF


async def test_stage2_gets_the_compiled_brief_of_a_confirmed_profile(fake_model, model_client):
    client = model_client
    assert (await client.put("/api/profile/core", headers=AUTH, json={
        "value": "Schreibt knapp, trocken, mit leiser Ironie."})).status == 200
    assert (await client.put("/api/profile/facets/autobiographical_journal", headers=AUTH,
                             json={"value": "Tagebuch in kurzen Absätzen, Präteritum."})
            ).status == 200
    assert (await client.post("/api/profile/traits", headers=AUTH, json={
        "key": "humor", "value": "trocken, selbstironisch", "scope": "core"})).status == 201
    brief = (await (await client.get("/api/profile/brief", headers=AUTH)).json())
    assert brief["compiled"] is True

    await _generate(client)

    sent = _system_of_stage2(fake_model)
    assert sent == brief["brief"]
    assert "Schreibt knapp, trocken, mit leiser Ironie." in sent
    assert "Tagebuch in kurzen Absätzen" in sent
    assert "- humor: trocken, selbstironisch" in sent
    assert DEFAULT_BRIEF.strip() in sent  # the journal's rules stay
    # Stage 1 never sees the profile.
    assert "leiser Ironie" not in str(fake_model.chats("journal_reconstruct")[-1].body)
