"""Governance against every automatic path (issue 16 item 2): the AI review's result,
evidence collection and interaction observations. Locks and the user's own values are never
overwritten; `frozen` changes nothing; `advising` queues; `learning` applies the rest."""

from __future__ import annotations

import pytest

from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN

MODES = ("learning", "advising", "frozen")


@pytest.fixture
async def model_client(fake_model, make_settings, aiohttp_client):
    return await aiohttp_client(create_app(make_settings(**fake_model.overrides()),
                                           local_token=TOKEN))


async def _profile(client) -> dict:
    return await (await client.get("/api/profile", headers=AUTH)).json()


def _trait(body: dict, key: str) -> dict:
    return next(t for t in body["traits"] if t["key"] == key)


async def _confirmed_profile(client, fake_model) -> None:
    """core (manual), humor (manual), rhythm (manual, locked), detail (automatic)."""
    await client.put("/api/profile/core", headers=AUTH, json={"value": "Knapp."})
    await client.post("/api/profile/traits", headers=AUTH, json={"key": "humor",
                                                                  "value": "trocken"})
    body = await (await client.post("/api/profile/traits", headers=AUTH, json={
        "key": "rhythm", "value": "kurze Sätze"})).json()
    await client.put("/api/profile/locks", headers=AUTH, json={
        "target": "trait", "name": _trait(body, "rhythm")["trait_id"], "locked": True})
    await client.put("/api/profile/governance", headers=AUTH, json={"governance": "learning"})
    fake_model.script("profile_review", {"summary": "Detail fehlt.", "changes": [
        {"action": "add", "key": "detail", "value": "sparsam"}]})
    response = await client.post("/api/profile/review", headers=AUTH, json={"mode": "review"})
    assert response.status == 201, await response.text()
    assert _trait(await _profile(client), "detail")["origin"] == "automatic"


@pytest.mark.parametrize("mode", MODES)
async def test_the_ai_review_under_each_governance(model_client, fake_model, mode):
    client = model_client
    await _confirmed_profile(client, fake_model)
    await client.put("/api/profile/governance", headers=AUTH, json={"governance": mode})
    before = await _profile(client)
    fake_model.script("profile_review", {"summary": "Neu.", "changes": [
        {"action": "update", "target": "core", "value": "Ausschweifend."},
        {"action": "update", "key": "humor", "value": "albern"},
        {"action": "update", "key": "rhythm", "value": "lange Sätze"},
        {"action": "update", "key": "detail", "value": "reich an Details"},
        {"action": "add", "key": "tone", "value": "warm"}]})
    response = await client.post("/api/profile/review", headers=AUTH, json={"mode": "review"})
    assert response.status == 201
    proposal = (await response.json())["proposal"]
    after = await _profile(client)
    # Never: the locked trait, the user's own trait, the user's own core.
    assert after["core"] == before["core"]
    assert _trait(after, "humor") == _trait(before, "humor")
    assert _trait(after, "rhythm") == _trait(before, "rhythm")
    statuses = [c["status"] for c in proposal["changes"]]
    if mode == "learning":
        assert statuses == ["pending", "pending", "pending", "applied", "applied"]
        assert _trait(after, "detail")["value"] == "reich an Details"
        assert _trait(after, "detail")["origin"] == "automatic"
        assert _trait(after, "tone")["origin"] == "automatic"
        assert after["version"] == before["version"] + 1
    else:
        assert statuses == ["pending"] * 5
        assert {k: v for k, v in after.items() if k != "governance"} == \
            {k: v for k, v in before.items() if k != "governance"}
    # What stays pending is the user's to decide, in every mode.
    response = await client.post(f"/api/profile/proposals/{proposal['proposal_id']}/accept",
                                 headers=AUTH, json={"change_ids": [
                                     proposal["changes"][1]["change_id"]]})
    assert response.status == 200
    humor = _trait(await _profile(client), "humor")
    assert (humor["value"], humor["origin"]) == ("albern", "accepted")


async def test_learning_applies_nothing_before_the_initial_build_is_confirmed(model_client,
                                                                              fake_model):
    client = model_client
    await client.put("/api/profile/governance", headers=AUTH, json={"governance": "learning"})
    fake_model.script("profile_review", {"changes": [{"action": "add", "key": "humor",
                                                       "value": "trocken"}]})
    response = await client.post("/api/profile/review", headers=AUTH,
                                 json={"mode": "initial_build"})
    proposal = (await response.json())["proposal"]
    assert [c["status"] for c in proposal["changes"]] == ["pending"]
    body = await _profile(client)
    assert body["traits"] == [] and body["lifecycle"] == "initial_pending"
    # The AI review sent the package, built the same way as the copy/paste one.
    sent = fake_model.chats("profile_review")[-1].body
    assert '"kind": "kansho.profile_analysis_package"' in sent["messages"][1]["content"]
    assert sent["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize("mode", MODES)
async def test_evidence_collection_under_each_governance(client, mode):
    response = await client.post("/api/journal/entries", headers=AUTH, json={
        "date": "2026-02-01", "text": "Ich schrieb heute lange über den Markt und das Brot."})
    assert response.status == 201
    # Not before the initial build is confirmed.
    assert (await (await client.get("/api/profile/evidence", headers=AUTH)).json())[
        "evidence"] == []
    await client.put("/api/profile/core", headers=AUTH, json={"value": "Knapp."})
    await client.put("/api/profile/governance", headers=AUTH, json={"governance": mode})
    before = await _profile(client)
    body = await (await client.get("/api/profile/evidence", headers=AUTH)).json()
    if mode == "frozen":
        assert body["evidence"] == []
    else:
        assert [e["signal"] for e in body["evidence"]] == ["entry_saved"]
        assert body["evidence"][0]["context_hint"] == "journal entry of 2026-02-01"
        again = await (await client.get("/api/profile/evidence", headers=AUTH)).json()
        assert again["added"] == 0 and len(again["evidence"]) == 1  # stored once
    assert await _profile(client) == before  # evidence never writes a trait


async def test_the_offline_model_answers_the_review_with_a_neutral_result(client):
    await client.put("/api/profile/core", headers=AUTH, json={"value": "Knapp."})
    response = await client.post("/api/profile/review", headers=AUTH, json={"mode": "review"})
    assert response.status == 200
    body = await response.json()
    assert body["proposal"] is None and "nothing to apply" in body["message"]
    assert await (await client.get("/api/profile/proposals", headers=AUTH)).json() == []
