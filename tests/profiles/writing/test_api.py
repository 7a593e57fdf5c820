"""`/api/profile/…`: manual edits and versions, bad input (nothing written), the analysis
package's bound, the result import's checks, per-change decisions and the lifecycle."""

from __future__ import annotations

import json
import random

from app.auth.accounts import add_user_sync
from app.storage.migrations import apply_migrations
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.store import store_connection

RESULT = "kansho.profile_analysis_result"
WORDS = "Morgens Fahrrad Markt Sauerteigbrot Suppe Nachbarin regnete leise ich wir und".split()


def prose(seed: int, words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


async def profile(client) -> dict:
    response = await client.get("/api/profile", headers=AUTH)
    assert response.status == 200
    return await response.json()


async def versions(client) -> list:
    return await (await client.get("/api/profile/versions", headers=AUTH)).json()


async def add_trait(client, key, value, scope="core") -> dict:
    response = await client.post("/api/profile/traits", headers=AUTH,
                                 json={"key": key, "value": value, "scope": scope})
    assert response.status == 201, await response.text()
    body = await response.json()
    return next(t for t in body["traits"] if t["key"] == key)


def result(mode="review", **body) -> dict:
    return {"kind": RESULT, "format_version": 1, "mode": mode, **body}


async def paste(client, payload, status=201) -> dict:
    response = await client.post("/api/profile/results", headers=AUTH,
                                 data=payload if isinstance(payload, str)
                                 else json.dumps(payload))
    body = await response.json()
    assert response.status == status, body
    return body


async def test_a_new_profile_is_empty_uninitialized_and_advising(client):
    body = await profile(client)
    assert (body["lifecycle"], body["governance"], body["version"]) == \
        ("uninitialized", "advising", 0)
    assert body["traits"] == [] and body["facets"] == {} and body["core"]["value"] == ""
    assert "humor" in body["seed_catalog"]


async def test_each_manual_edit_is_one_version_and_confirms_the_profile(client):
    await client.put("/api/profile/core", headers=AUTH, json={"value": "Knapp und trocken."})
    trait = await add_trait(client, "humor", "selbstironisch")
    assert trait["origin"] == "manual" and not trait["locked"]
    response = await client.put(f"/api/profile/traits/{trait['trait_id']}", headers=AUTH,
                                json={"value": "leise Ironie"})
    assert response.status == 200
    response = await client.put("/api/profile/locks", headers=AUTH, json={
        "target": "trait", "name": trait["trait_id"], "locked": True})
    body = await response.json()
    assert body["traits"][0]["locked"] is True and body["traits"][0]["value"] == "leise Ironie"
    assert body["lifecycle"] == "confirmed" and body["version"] == 4
    listed = await versions(client)
    assert [v["version"] for v in listed] == [4, 3, 2, 1]
    assert listed[-1]["profile"]["core"]["value"] == "Knapp und trocken."
    assert listed[-1]["profile"]["traits"] == []  # a version keeps the state of its time
    # A governance switch is no content change: no version.
    response = await client.put("/api/profile/governance", headers=AUTH,
                                json={"governance": "frozen"})
    assert (await response.json())["governance"] == "frozen"
    assert len(await versions(client)) == 4


BAD_INPUT = [
    ("PUT", "/api/profile/core", {"value": "   "}, 400, "empty_value"),
    ("PUT", "/api/profile/core", {"value": "x", "extra": 1}, 400, "invalid_request"),
    ("PUT", "/api/profile/core", {"value": "x" * 20001}, 413, "value_too_long"),
    ("PUT", "/api/profile/facets/---", {"value": "x"}, 400, "invalid_name"),
    ("PUT", "/api/profile/facets/%20%20", {"value": "x"}, 400, "invalid_name"),
    ("PUT", "/api/profile/facets/" + "f" * 81, {"value": "x"}, 400, "invalid_name"),
    ("POST", "/api/profile/traits", {"key": "", "value": "x"}, 400, "invalid_key"),
    ("POST", "/api/profile/traits", {"key": "k" * 81, "value": "x"}, 400, "invalid_key"),
    ("POST", "/api/profile/traits", {"key": "humor", "value": "x", "scope": "?!"}, 400,
     "invalid_name"),
    ("POST", "/api/profile/traits", {"key": "humor", "value": "x", "scope": "letters"}, 409,
     "change_not_applicable"),
    ("PUT", "/api/profile/traits/trait_nope", {"value": "x"}, 404, "not_found"),
    ("PUT", "/api/profile/traits/trait_nope", {}, 400, "invalid_request"),
    ("DELETE", "/api/profile/traits/trait_nope", None, 404, "not_found"),
    ("DELETE", "/api/profile/facets/letters", None, 404, "not_found"),
    ("PUT", "/api/profile/locks", {"target": "facet", "name": "x", "locked": True}, 404,
     "not_found"),
    ("PUT", "/api/profile/locks", {"target": "everything", "locked": True}, 400,
     "invalid_request"),
    ("PUT", "/api/profile/governance", {"governance": "anarchy"}, 400, "invalid_request"),
    ("GET", "/api/profile/package?mode=everything", None, 400, "invalid_mode"),
    ("POST", "/api/profile/proposals/prop_nope/accept", None, 404, "not_found"),
]


async def test_bad_input_gets_the_error_shape_and_writes_nothing(client):
    before = await profile(client)
    for method, path, body, status, code in BAD_INPUT:
        response = await client.request(method, path, headers=AUTH, json=body)
        assert response.status == status, (method, path, await response.text())
        assert (await response.json())["error"]["code"] == code, (method, path)
        assert await profile(client) == before, (method, path)
        assert await versions(client) == [], (method, path)


async def _entries(client, count: int, words: int) -> None:
    for day in range(count):
        response = await client.post("/api/journal/entries", headers=AUTH, json={
            "date": f"2026-01-{day + 1:02d}", "text": prose(day, words)})
        assert response.status == 201


async def test_the_package_stays_within_profile_package_chars_and_cuts_at_word_bounds(client):
    await _entries(client, 12, 700)  # ~ 60 000 characters of entries
    await add_trait(client, "detail", prose(99, 400))
    # Unmasked: the masking's own placeholders would stand in the texts compared below.
    response = await client.get("/api/profile/package?mode=initial_build&masked=false",
                                headers=AUTH)
    body = await response.json()
    package = body["package"]
    assert body["masked"] is False and body["package_id"] is None
    assert body["chars"] <= 12000 and body["max_chars"] == 12000
    assert len(json.dumps(package, ensure_ascii=False, indent=1)) <= 12000
    assert package["kind"] == "kansho.profile_analysis_package"
    assert package["format_version"] == 1 and package["mode"] == "initial_build"
    assert package["target"] == "writing"
    assert package["evidence"] and package["left_out"] > 0
    assert package["expected_result"]["kind"] == RESULT
    originals = {}
    entries = await (await client.get("/api/journal/export?format=json",
                                      headers=AUTH)).json()
    for entry in entries["entries"] if isinstance(entries, dict) else entries:
        originals[entry["entry_id"]] = " ".join(entry["text"].split())
    for item in package["evidence"]:
        assert item["ref"].startswith("entry:") and item["occurred_at"]
        original = originals[item["ref"].split(":")[1]]
        if item.get("cut"):
            head = item["text"].removesuffix("…")
            assert original.startswith(head) and original[len(head)] == " "
        else:
            assert item["text"] == original
    # The prompt carries the package whole.
    assert json.dumps(package, ensure_ascii=False, indent=1) in body["prompt"]
    # The package's dates span new and old (recent voice and baseline).
    dates = {item["context_hint"][-10:] for item in package["evidence"]}
    assert "2026-01-12" in dates and "2026-01-01" in dates


BAD_RESULTS = [
    ("not json at all", 400, "invalid_json"),
    ("[1, 2]", 400, "schema_error"),
    (json.dumps({"kind": "something.else", "format_version": 1, "mode": "review"}), 400,
     "unknown_kind"),
    (json.dumps({"kind": "kansho.profile_analysis_package", "format_version": 1}), 400,
     "unknown_kind"),
    (json.dumps({"kind": [], "format_version": 1}), 400, "unknown_kind"),  # was a 500
    (json.dumps({"kind": {"a": 1}, "format_version": 1}), 400, "unknown_kind"),
    (json.dumps(result(format_version=2)), 400, "unsupported_format_version"),
    (json.dumps(result(mode="rewrite")), 400, "schema_error"),
    (json.dumps(result(changes=[{"action": "explode", "target": "trait"}])), 400,
     "schema_error"),
    (json.dumps(result(changes=[{"action": "add", "key": "humor", "value": 3}])), 400,
     "schema_error"),
    (json.dumps(result(changes=[{"action": "add", "key": "humor", "value": "x" * 20001}])),
     400, "schema_error"),
    (json.dumps(result(changes=[{"action": "add", "target": "facet", "key": "---",
                                 "value": "x"}])), 400, "schema_error"),
    (json.dumps(result(changes=[{"action": "add", "key": "humor", "value": "x",
                                 "scope": " ?! "}])), 400, "schema_error"),
    (json.dumps(result(changes=[])), 422, "nothing_to_apply"),
    (json.dumps(result(changes=[{"action": "keep", "key": "humor"}])), 422,
     "nothing_to_apply"),
    (json.dumps(result(changes=[{"action": "update", "key": "nonexistent", "value": "x"}])),
     422, "nothing_to_apply"),
]


async def test_a_bad_result_is_refused_and_nothing_is_stored(client):
    before = await profile(client)
    for payload, status, code in BAD_RESULTS:
        body = await paste(client, payload, status)
        assert body["error"]["code"] == code, payload
        assert await (await client.get("/api/profile/proposals", headers=AUTH)).json() == []
        assert await profile(client) == before, payload


async def test_unknown_references_are_listed_and_the_rest_becomes_a_proposal(client):
    await _entries(client, 1, 30)
    package = (await (await client.get("/api/profile/package?mode=review",
                                       headers=AUTH)).json())["package"]
    ref = package["evidence"][0]["ref"]
    humor = await add_trait(client, "humor", "trocken")
    proposal = await paste(client, result(changes=[
        {"action": "update", "key": "humor", "value": "leise, trocken",
         "source_refs": [ref, "entry:nope:nope", "dayone_export"]},
        {"action": "remove", "trait_id": "trait_gone"},
        {"action": "add", "key": "rhythm", "value": "kurze Sätze", "source_refs": [ref]},
    ]))
    assert set(proposal["unknown_refs"]) == {"source:entry:nope:nope", "trait:trait_gone"}
    assert [c["action"] for c in proposal["changes"]] == ["update", "add"]
    assert all(c["status"] == "pending" for c in proposal["changes"])
    update = proposal["changes"][0]
    assert update["source_refs"] == [ref, "dayone_export"]
    assert {s["context_hint"] for s in update["sources"]} == {
        "journal entry of 2026-01-01", "external_context"}
    # Never auto-applied: the profile is as it was.
    now = await profile(client)
    assert [t["value"] for t in now["traits"]] == ["trocken"]
    assert now["traits"][0]["trait_id"] == humor["trait_id"]


async def test_each_decision_that_accepts_is_exactly_one_version(client):
    await add_trait(client, "humor", "trocken")
    start = len(await versions(client))
    proposal = await paste(client, result(changes=[
        {"action": "update", "key": "humor", "value": "leise"},
        {"action": "add", "key": "rhythm", "value": "kurz"},
        {"action": "add", "target": "facet", "key": "autobiographical_journal",
         "value": "Präteritum"},
    ]))
    pid = proposal["proposal_id"]
    first, second, third = (c["change_id"] for c in proposal["changes"])

    response = await client.post(f"/api/profile/proposals/{pid}/accept", headers=AUTH,
                                 json={"change_ids": [first]})
    decided = await response.json()
    assert [c["status"] for c in decided["changes"]] == ["accepted", "pending", "pending"]
    assert len(await versions(client)) == start + 1
    body = await profile(client)
    assert body["traits"][0]["value"] == "leise" and body["traits"][0]["origin"] == "accepted"

    response = await client.post(f"/api/profile/proposals/{pid}/reject", headers=AUTH,
                                 json={"change_ids": [second]})
    assert response.status == 200
    assert len(await versions(client)) == start + 1  # a rejection is no version

    response = await client.post(f"/api/profile/proposals/{pid}/accept", headers=AUTH,
                                 json={"change_ids": [second]})
    assert response.status == 409
    assert (await response.json())["error"]["code"] == "change_decided"

    response = await client.post(f"/api/profile/proposals/{pid}/accept", headers=AUTH)
    assert [c["status"] for c in (await response.json())["changes"]] == \
        ["accepted", "rejected", "accepted"]
    assert len(await versions(client)) == start + 2
    assert "autobiographical_journal" in (await profile(client))["facets"]
    response = await client.post(f"/api/profile/proposals/{pid}/accept", headers=AUTH)
    assert (await response.json())["error"]["code"] == "nothing_pending"


async def test_accept_all_is_one_version_and_a_change_that_no_longer_fits_writes_nothing(
        client):
    await add_trait(client, "humor", "trocken")
    proposal = await paste(client, result(changes=[
        {"action": "add", "key": "rhythm", "value": "kurz"},
        {"action": "update", "key": "humor", "value": "leise"}]))
    humor = (await profile(client))["traits"][0]
    await client.delete(f"/api/profile/traits/{humor['trait_id']}", headers=AUTH)
    start = len(await versions(client))
    response = await client.post(f"/api/profile/proposals/{proposal['proposal_id']}/accept",
                                 headers=AUTH)
    assert response.status == 409
    assert (await response.json())["error"]["code"] == "change_not_applicable"
    assert len(await versions(client)) == start
    assert (await profile(client))["traits"] == []
    response = await client.post(
        f"/api/profile/proposals/{proposal['proposal_id']}/accept", headers=AUTH,
        json={"change_ids": [proposal["changes"][0]["change_id"]]})
    assert response.status == 200
    assert len(await versions(client)) == start + 1


async def test_initial_build_moves_the_lifecycle_and_legacy_kinds_are_read(client):
    proposal = await paste(client, {
        "kind": "kansho.profile_review_result", "format_version": 1, "mode": "initial_build",
        "summary": "Ein knapper, trockener Ton.",
        "core": {"summary": "Schreibt knapp."},
        "facets": {"autobiographical_journal": {"value": "Tagebuch im Präteritum"}},
        "traits": [{"key": "humor", "summary": "trocken", "scope": "core"}]})
    assert [c["target"] for c in proposal["changes"]] == ["core", "facet", "trait"]
    assert proposal["changes"][0]["value"] == "Schreibt knapp."
    assert (await profile(client))["lifecycle"] == "initial_pending"
    brief = await (await client.get("/api/profile/brief", headers=AUTH)).json()
    assert brief["compiled"] is False  # not confirmed yet: the default brief

    response = await client.post(f"/api/profile/proposals/{proposal['proposal_id']}/reject",
                                 headers=AUTH)
    assert response.status == 200
    assert (await profile(client))["lifecycle"] == "uninitialized"

    again = await paste(client, result("initial_build", traits=[{"key": "humor",
                                                                   "value": "trocken"}]))
    assert (await profile(client))["lifecycle"] == "initial_pending"
    await client.post(f"/api/profile/proposals/{again['proposal_id']}/accept", headers=AUTH)
    body = await profile(client)
    assert body["lifecycle"] == "confirmed" and body["traits"][0]["origin"] == "accepted"
    assert (await (await client.get("/api/profile/brief", headers=AUTH)).json())["compiled"]


async def test_accepting_a_change_to_a_locked_trait_is_refused_until_it_is_unlocked(client):
    humor = await add_trait(client, "humor", "trocken")
    await client.put("/api/profile/locks", headers=AUTH, json={
        "target": "trait", "name": humor["trait_id"], "locked": True})
    proposal = await paste(client, result(changes=[
        {"action": "update", "key": "humor", "value": "albern"}]))
    start = len(await versions(client))
    url = f"/api/profile/proposals/{proposal['proposal_id']}/accept"
    response = await client.post(url, headers=AUTH)
    assert response.status == 409
    assert (await response.json())["error"]["code"] == "field_locked"
    assert len(await versions(client)) == start
    await client.put("/api/profile/locks", headers=AUTH, json={
        "target": "trait", "name": humor["trait_id"], "locked": False})
    assert (await client.post(url, headers=AUTH)).status == 200
    assert (await profile(client))["traits"][0]["value"] == "albern"


async def test_profiles_are_per_user(aiohttp_client, make_settings):
    """In headless mode each user has their own profile, proposals and versions."""
    settings = make_settings(headless=True, llm_provider="offline")
    settings.data_path.mkdir(parents=True, exist_ok=True)
    conn = store_connection(settings)
    apply_migrations(conn)
    anna = {"Authorization": f"Bearer {add_user_sync(conn, 'anna', 'correct horse battery')}"}
    conn.close()
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    await client.put("/api/profile/core", headers=anna, json={"value": "Annas Stil."})
    proposal = await (await client.post("/api/profile/results", headers=anna, data=json.dumps(
        result(changes=[{"action": "add", "key": "humor", "value": "x"}])))).json()
    assert (await profile(client))["core"]["value"] == ""  # local sees nothing of anna's
    assert await versions(client) == []
    response = await client.post(f"/api/profile/proposals/{proposal['proposal_id']}/accept",
                                 headers=AUTH)
    assert response.status == 404  # nor can local decide anna's proposal
    body = await (await client.get("/api/profile", headers=anna)).json()
    assert body["core"]["value"] == "Annas Stil." and body["traits"] == []


async def test_a_trait_edit_with_a_bad_scope_writes_nothing(client):
    humor = await add_trait(client, "humor", "trocken")
    start = len(await versions(client))
    response = await client.put(f"/api/profile/traits/{humor['trait_id']}", headers=AUTH,
                                json={"value": "albern", "scope": "letters"})
    assert response.status == 409
    assert (await profile(client))["traits"][0]["value"] == "trocken"
    assert len(await versions(client)) == start
    await client.put("/api/profile/facets/letters", headers=AUTH, json={"value": "Briefe"})
    response = await client.put(f"/api/profile/traits/{humor['trait_id']}", headers=AUTH,
                                json={"value": "albern", "scope": "letters"})
    trait = (await response.json())["traits"][0]
    assert (trait["value"], trait["scope"]) == ("albern", "letters")
    assert len(await versions(client)) == start + 2  # the facet, then the trait: one each


async def test_accepting_a_review_change_on_an_empty_profile_confirms_it(client):
    proposal = await paste(client, result(changes=[{"action": "add", "key": "humor",
                                                     "value": "trocken"}]))
    assert (await profile(client))["lifecycle"] == "uninitialized"  # a review proposes nothing
    await client.post(f"/api/profile/proposals/{proposal['proposal_id']}/accept", headers=AUTH)
    assert (await profile(client))["lifecycle"] == "confirmed"
    assert (await (await client.get("/api/profile/brief", headers=AUTH)).json())["compiled"]
