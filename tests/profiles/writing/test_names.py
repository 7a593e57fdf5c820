"""Facet and trait names are free text (issue 22 §5): "Tagebuch" is accepted, the stable key
is derived once (`app.profiles.governance.derive_key`), a name finds its item by key or label, a
collision gets a suffix, the same name twice is refused, and a profile stored before names
were free text keeps reading."""

from __future__ import annotations

import msgspec
import pytest

from app.profiles.writing.model import (
    Change,
    NotApplicable,
    Profile,
    TraitSpec,
    apply_change,
    decode_profile,
)
from tests.conftest import AUTH


async def _profile(client) -> dict:
    return await (await client.get("/api/profile", headers=AUTH)).json()


class TestFreeNamesThroughTheApi:
    async def test_a_facet_named_tagebuch_is_accepted_and_found_by_its_name(self, client):
        response = await client.put("/api/profile/facets/Tagebuch", headers=AUTH,
                                    json={"value": "Präteritum."})
        assert response.status == 200, await response.text()
        facets = (await response.json())["facets"]
        assert facets == {"tagebuch": {**facets["tagebuch"], "label": "Tagebuch",
                                       "value": "Präteritum."}}
        # Edited by its name in another case and by its key: the same facet.
        await client.put("/api/profile/facets/TAGEBUCH", headers=AUTH, json={"value": "Kurz."})
        await client.put("/api/profile/facets/tagebuch", headers=AUTH, json={"value": "Warm."})
        facets = (await _profile(client))["facets"]
        assert list(facets) == ["tagebuch"] and facets["tagebuch"]["value"] == "Warm."
        # A trait in it, its scope named as the user wrote it.
        response = await client.post("/api/profile/traits", headers=AUTH, json={
            "key": "Sätze – kurz", "value": "selten mehr als zehn Wörter", "scope": "Tagebuch"})
        assert response.status == 201, await response.text()
        trait = (await response.json())["traits"][0]
        assert (trait["key"], trait["label"], trait["scope"]) == \
            ("saetze_kurz", "Sätze – kurz", "tagebuch")
        response = await client.put("/api/profile/locks", headers=AUTH, json={
            "target": "facet", "name": "Tagebuch", "locked": True})
        assert (await response.json())["facets"]["tagebuch"]["locked"] is True
        versions = await (await client.get("/api/profile/versions", headers=AUTH)).json()
        assert [(v["reason"], v["reason_args"]) for v in versions][-1] == \
            ("facet_added", {"name": "Tagebuch"})
        assert versions[0]["reason_args"] == {"target": "facet", "name": "Tagebuch"}
        response = await client.delete("/api/profile/facets/Tagebuch", headers=AUTH)
        body = await response.json()
        assert body["facets"] == {} and body["traits"] == []

    async def test_names_that_fold_to_one_key_get_a_suffix_and_a_repeat_is_refused(self, client):
        for name in ("Tage buch", "Tage-buch"):
            assert (await client.put(f"/api/profile/facets/{name}", headers=AUTH,
                                     json={"value": name})).status == 200
        facets = (await _profile(client))["facets"]
        assert {k: f["label"] for k, f in facets.items()} == \
            {"tage_buch": "Tage buch", "tage_buch_2": "Tage-buch"}
        assert (await client.post("/api/profile/traits", headers=AUTH,
                                  json={"key": "Über mich", "value": "a"})).status == 201
        assert (await client.post("/api/profile/traits", headers=AUTH,
                                  json={"key": "Ueber-mich", "value": "b"})).status == 201
        response = await client.post("/api/profile/traits", headers=AUTH,
                                     json={"key": "über  MICH", "value": "c"})
        assert response.status == 409
        assert (await response.json())["error"]["code"] == "change_not_applicable"
        keys = [t["key"] for t in (await _profile(client))["traits"]]
        assert keys == ["ueber_mich", "ueber_mich_2"]

    async def test_a_pasted_result_names_facets_and_traits_by_their_names(self, client):
        await client.put("/api/profile/facets/Reisetagebuch", headers=AUTH,
                         json={"value": "locker"})
        await client.post("/api/profile/traits", headers=AUTH, json={
            "key": "Satzlänge", "value": "kurz", "scope": "Reisetagebuch"})
        response = await client.post("/api/profile/results", headers=AUTH, json={
            "kind": "kansho.profile_analysis_result", "format_version": 1, "mode": "review",
            "changes": [{"action": "update", "key": "satzlänge", "value": "mittel"},
                        {"action": "update", "target": "facet", "key": "reisetagebuch",
                         "value": "sehr locker"}]})
        proposal = await response.json()
        assert response.status == 201, proposal
        assert proposal["unknown_refs"] == []
        accepted = await (await client.post(
            f"/api/profile/proposals/{proposal['proposal_id']}/accept", headers=AUTH)).json()
        assert all(c["status"] == "accepted" for c in accepted["changes"])
        body = await _profile(client)
        assert body["traits"][0]["value"] == "mittel"
        assert body["facets"]["reisetagebuch"]["value"] == "sehr locker"


class TestNamesInTheModel:
    def test_a_profile_stored_with_free_text_trait_keys_keeps_reading(self):
        stored = msgspec.json.encode({"traits": [
            {"trait_id": "t1", "key": "Satzlänge", "value": "kurz"},
            {"trait_id": "t2", "key": "satzlaenge", "value": "lang", "scope": "core"},
            {"trait_id": "t3", "key": "humor", "value": "trocken"}]})
        profile = decode_profile(stored)
        assert [(t.key, t.label) for t in profile.traits] == \
            [("satzlaenge_2", "Satzlänge"), ("satzlaenge", ""), ("humor", "")]
        assert profile.find("Satzlänge").trait_id == "t1"
        assert profile.find("satzlaenge").trait_id == "t2"

    def test_a_merge_and_a_split_derive_their_new_keys(self):
        profile = Profile()
        for name in ("Ironie", "Witz"):
            profile = apply_change(profile, Change("add", key=name, value="x"), "manual", 1.0)
        merged = apply_change(profile, Change("merge", keys=["Ironie", "witz"],
                                              key="Trockener Humor", value="y"), "manual", 2.0)
        assert [(t.key, t.label) for t in merged.traits] == [("trockener_humor",
                                                              "Trockener Humor")]
        split = apply_change(merged, Change("split", key="trockener humor", into=[
            TraitSpec("Ironie", "a"), TraitSpec("Lakonie", "b")]),
            "manual", 3.0)
        assert [t.key for t in split.traits] == ["ironie", "lakonie"]

    def test_a_name_without_a_letter_is_not_applicable(self):
        with pytest.raises(NotApplicable, match="letter or digit"):
            apply_change(Profile(), Change("add", target="facet", key="–", value="x"),
                         "manual", 1.0)
