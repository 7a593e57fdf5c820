"""Portability (issue 16 item 7): export and import of the profiles as JSON documents."""

from __future__ import annotations

import json

from tests.conftest import AUTH


async def _build(client) -> None:
    await client.put("/api/profile/core", headers=AUTH, json={"value": "Knapp."})
    await client.put("/api/profile/facets/autobiographical_journal", headers=AUTH,
                     json={"value": "Präteritum."})
    await client.post("/api/profile/traits", headers=AUTH, json={
        "key": "humor", "value": "trocken", "scope": "autobiographical_journal"})
    await client.put("/api/profile/governance", headers=AUTH, json={"governance": "frozen"})
    await client.put("/api/profile/interaction/prefs/answer_length", headers=AUTH,
                     json={"value": "ausführlich"})
    await client.post("/api/journal/entries", headers=AUTH, json={
        "date": "2026-01-05", "text": "Mein eigener Eintrag über Anna."})


async def test_export_then_import_replaces_facets_prefs_and_governance(client):
    await _build(client)
    await client.get("/api/profile/evidence", headers=AUTH)
    response = await client.get("/api/profile/export?kind=all", headers=AUTH)
    assert response.status == 200
    assert "attachment" in response.headers["Content-Disposition"]
    document = await response.json()
    assert document["kind"] == "kansho.profiles" and document["format_version"] == 1
    assert document["writing"]["kind"] == "kansho.writing_profile"
    assert document["interaction"]["kind"] == "kansho.interaction_profile"
    text = json.dumps(document)
    assert "Anna" not in text and "entry:" not in text and "sources" not in text

    # Change everything, then restore from the document.
    await client.put("/api/profile/facets/letters", headers=AUTH, json={"value": "Briefe"})
    await client.put("/api/profile/governance", headers=AUTH, json={"governance": "learning"})
    await client.put("/api/profile/interaction/prefs/follow_up", headers=AUTH,
                     json={"value": "keine Fragen"})
    versions = len(await (await client.get("/api/profile/versions", headers=AUTH)).json())
    response = await client.post("/api/profile/import", headers=AUTH, data=json.dumps(document))
    assert response.status == 200, await response.text()
    body = await response.json()
    assert set(body["facets"]) == {"autobiographical_journal"}  # replaced, not merged
    assert body["governance"] == "frozen"
    assert [(t["key"], t["scope"]) for t in body["traits"]] == [
        ("humor", "autobiographical_journal")]
    interaction = await (await client.get("/api/profile/interaction", headers=AUTH)).json()
    assert set(interaction["prefs"]) == {"answer_length"}
    assert len(await (await client.get("/api/profile/versions", headers=AUTH)).json()) == \
        versions + 1
    # Journal entries and evidence are untouched by an import.
    assert len(await (await client.get("/api/journal/export?format=json",
                                       headers=AUTH)).json()) > 0


async def test_a_writing_document_alone_leaves_the_interaction_profile(client):
    await _build(client)
    writing = await (await client.get("/api/profile/export?kind=writing", headers=AUTH)).json()
    await client.put("/api/profile/interaction/prefs/follow_up", headers=AUTH,
                     json={"value": "keine Fragen"})
    response = await client.post("/api/profile/import", headers=AUTH, data=json.dumps(writing))
    assert response.status == 200
    interaction = await (await client.get("/api/profile/interaction", headers=AUTH)).json()
    assert set(interaction["prefs"]) == {"answer_length", "follow_up"}


BAD_DOCUMENTS = [
    "not json",
    {"kind": "kansho.something", "format_version": 1},
    {"kind": "kansho.writing_profile", "format_version": 2},
    {"kind": "kansho.writing_profile", "format_version": 1, "governance": "anarchy"},
    {"kind": "kansho.writing_profile", "format_version": 1, "sources": []},
    {"kind": "kansho.writing_profile", "format_version": 1,
     "traits": [{"key": "humor", "value": "x", "scope": "letters"}]},
    {"kind": "kansho.writing_profile", "format_version": 1,
     "traits": [{"key": "humor", "value": "x"}, {"key": "Humor", "value": "y"}]},
    {"kind": "kansho.writing_profile", "format_version": 1, "facets": {"Bad Name": {}}},
    {"kind": "kansho.interaction_profile", "format_version": 1,
     "prefs": {"answer_length": {"value": "x" * 20001}}},
    {"kind": "kansho.profiles", "format_version": 1},
]


async def _exported(client) -> dict:
    document = await (await client.get("/api/profile/export?kind=all", headers=AUTH)).json()
    return {part: {k: v for k, v in document[part].items() if k != "exported_at"}
            for part in ("writing", "interaction")}


async def test_a_bad_document_is_refused_and_nothing_changes(client):
    await _build(client)
    before = await _exported(client)
    for document in BAD_DOCUMENTS:
        response = await client.post("/api/profile/import", headers=AUTH,
                                     data=document if isinstance(document, str)
                                     else json.dumps(document))
        assert response.status == 400, document
        assert (await response.json())["error"]["code"] == "invalid_document"
        assert await _exported(client) == before, document
