"""Seed 004 §14–§15: the profile's bootstrap reads an imported diary (Day One, Markdown) as
`external_context` — the user's own earlier writing, not a Novaberg source — of the facet
`autobiographical_journal` (holiday diaries map to it), dated when it was written."""

from __future__ import annotations

from tests.backup.diary_support import dayone_zip, markdown_zip
from tests.conftest import AUTH


async def _package(client) -> dict:
    response = await client.get("/api/profile/package?mode=initial_build", headers=AUTH)
    assert response.status == 200
    return (await response.json())["package"]


async def test_imported_entries_are_offered_to_the_bootstrap_as_external_context(client):
    assert (await client.post("/api/journal/import/diary", headers=AUTH,
                              data=dayone_zip())).status == 200
    await client.post("/api/journal/entries", headers=AUTH,
                      json={"date": "2026-01-05", "text": "Heute selbst geschrieben, in Novaberg."})
    package = await _package(client)
    by_hint = {item["context_hint"]: item for item in package["evidence"]}
    holiday = by_hint["Day One diary entry of 2025-07-02 (imported)"]
    assert holiday["kind"] == "external_context"
    assert holiday["facet"] == "autobiographical_journal"
    assert holiday["occurred_at"] == "2025-07-02T18:30:00+00:00"  # written then, not imported now
    assert holiday["text"].startswith("# Urlaub auf São Miguel")
    assert holiday["ref"].startswith("entry:")
    imported = [i for i in package["evidence"] if i["kind"] == "external_context"]
    assert len(imported) == 4
    own = by_hint["journal entry of 2026-01-05"]
    assert own["kind"] == "entry" and "facet" not in own
    assert package["signals"]["kinds"] == {"entry": 1, "external_context": 4}
    assert "`external_context`" in package["task"]


async def test_markdown_diaries_are_external_context_too(client):
    await client.post("/api/journal/import/diary", headers=AUTH, data=markdown_zip())
    package = await _package(client)
    assert {i["context_hint"] for i in package["evidence"]} == {
        f"Markdown diary entry of {day} (imported)"
        for day in ("2025-03-14", "2025-03-15", "2025-03-16")}
    assert {i["facet"] for i in package["evidence"]} == {"autobiographical_journal"}


async def test_a_result_citing_an_imported_entry_knows_it(client):
    await client.post("/api/journal/import/diary", headers=AUTH, data=markdown_zip())
    ref = (await _package(client))["evidence"][0]["ref"]
    response = await client.post("/api/profile/results", headers=AUTH, json={
        "kind": "kansho.profile_analysis_result", "format_version": 1,
        "mode": "initial_build", "target": "writing", "evidence_basis": ["kansho_evidence"],
        "changes": [{"action": "add", "target": "trait", "key": "Knappe Sätze",
                     "scope": "core", "value": "Kurz, oft ohne Verb.",
                     "source_refs": [ref]}]})
    body = await response.json()
    assert response.status in (200, 201), body
    assert body["unknown_refs"] == []
