"""The copy package leaves the machine (issue 22 §5): by default it goes through the privacy
gateway's masking — registered people and numbers become placeholders, the egress gate's check
holds the result — and the pasted answer's placeholders are put back here, from the mapping
kept locally. Only the user's explicit choice shows the text unmasked."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from app.profiles.writing import package as pkg
from app.profiles.writing.model import Profile, Trait
from app.llm.privacy import Masker, NameIndex
from tests.conftest import AUTH

RESULT = "kansho.profile_analysis_result"
ENTRY = ("Heute habe ich lange mit Carla telefoniert, ihre neue Nummer ist 0171 2345678. "
         "Danach bin ich mit Carla Mustermann am Fluss spazieren gegangen.")
SECRETS = ("Carla", "Mustermann", "0171", "2345678")


async def _register(client) -> None:
    response = await client.put("/api/privacy/identities", headers=AUTH, json={
        "people": [{"name": "Carla Mustermann", "aliases": ["Carla"]}]})
    assert response.status == 200, await response.text()


async def _with_entry(client) -> None:
    await _register(client)
    await client.put("/api/profile/core", headers=AUTH,
                     json={"value": "Erzählt viel von Carla, knapp und warm."})
    response = await client.post("/api/journal/entries", headers=AUTH,
                                 json={"date": "2026-03-04", "text": ENTRY})
    assert response.status == 201


async def _package(client, query: str = "") -> dict:
    response = await client.get(f"/api/profile/package?mode=review{query}", headers=AUTH)
    body = await response.json()
    assert response.status == 200, body
    return body


class TestMaskedByDefault:
    async def test_no_registered_name_or_number_is_in_the_masked_package(self, client):
        await _with_entry(client)
        body = await _package(client)
        assert body["masked"] is True and body["package_id"].startswith("ppkg_")
        for secret in SECRETS:
            assert secret not in body["prompt"], secret
            assert secret not in json.dumps(body["package"], ensure_ascii=False), secret
        assert "[PERSON_1]" in body["prompt"] and "[PHONE_1]" in body["prompt"]
        assert body["placeholders"] == {"PERSON": 2, "PHONE": 1}
        assert body["package"]["expected_result"]["package_id"] == body["package_id"]
        assert "placeholders" in body["package"]["task"]
        # The profile's own words stay: the result can still name what it changes.
        assert body["package"]["kind"] == "kansho.profile_analysis_package"

    async def test_the_explicit_choice_shows_the_text_as_it_is(self, client):
        await _with_entry(client)
        body = await _package(client, "&masked=false")
        assert body["masked"] is False and body["package_id"] is None
        assert "Carla Mustermann" in body["prompt"] and "0171 2345678" in body["prompt"]
        assert body["placeholders"] == {}

    async def test_a_bad_masked_value_is_refused(self, client):
        response = await client.get("/api/profile/package?masked=maybe", headers=AUTH)
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "invalid_request"

    async def test_a_registered_name_the_masking_cannot_reach_refuses_the_package(self, client):
        """A facet named after a person keeps the name in its key (keys are not masked: the
        result names facets by them); the egress gate's check refuses the package."""
        await _with_entry(client)
        await client.put("/api/profile/facets/Briefe%20an%20Carla", headers=AUTH,
                         json={"value": "förmlicher"})
        response = await client.get("/api/profile/package?mode=review", headers=AUTH)
        body = await response.json()
        assert response.status == 422, body
        assert body["error"]["code"] == "privacy_blocked"
        assert "Carla" not in body["error"]["message"]
        # The user's explicit choice still gets the text.
        assert "briefe_an_carla" in (await _package(client, "&masked=false"))["prompt"]


class TestDemaskedOnImport:
    async def test_an_imported_result_gets_the_real_names_back(self, client):
        await _with_entry(client)
        body = await _package(client)
        person = next(p for p in ("[PERSON_1]", "[PERSON_2]") if p in body["prompt"])
        response = await client.post("/api/profile/results", headers=AUTH, data=json.dumps({
            "kind": RESULT, "format_version": 1, "mode": "review",
            "package_id": body["package_id"],
            "summary": f"Schreibt zärtlich über {person}.",
            "changes": [{"action": "add", "key": "Nähe", "value":
                         f"nennt {person} beim Vornamen, notiert [PHONE_1] genau",
                         "rationale": f"{person} kommt oft vor"}]}))
        proposal = await response.json()
        assert response.status == 201, proposal
        change = proposal["changes"][0]
        assert "[PERSON" not in change["value"] and "[PHONE" not in change["value"]
        assert "0171 2345678" in change["value"]
        assert "Carla" in change["value"] and "Carla" in proposal["summary"]
        assert "Carla" in change["rationale"]

    async def test_a_result_without_its_package_id_uses_the_newest_mapping(self, client):
        await _with_entry(client)
        await _package(client)
        pasted = "```json\n" + json.dumps({
            "kind": RESULT, "format_version": 1, "mode": "review",
            "changes": [{"action": "add", "key": "humor", "value": "lacht mit PERSON_1"}]}) \
            + "\n```"
        proposal = await (await client.post("/api/profile/results", headers=AUTH,
                                            json={"text": pasted})).json()
        assert "Carla" in proposal["changes"][0]["value"]

    async def test_a_package_no_longer_kept_leaves_its_placeholders(self, client):
        await _with_entry(client)
        await _package(client)
        proposal = await (await client.post("/api/profile/results", headers=AUTH, data=json.dumps({
            "kind": RESULT, "format_version": 1, "mode": "review", "package_id": "ppkg_gone",
            "changes": [{"action": "add", "key": "humor", "value": "lacht mit [PERSON_1]"}]
        }))).json()
        assert proposal["changes"][0]["value"] == "lacht mit [PERSON_1]"


NAMES = st.sampled_from(["Carla Mustermann", "Jörg Weißmüller", "Anna-Lena Öztürk",
                         "Sophie Marceau", "Ben Krüger"])
PHONES = st.sampled_from(["0171 2345678", "+49 171 2345678", "030/12345678", "0171-2345678"])
FILLER = st.sampled_from(["Heute", "war", "ich", "mit", "im Garten.", "Abends", "schrieb",
                          "lange", "und", "dann", "Kaffee."])


@settings(max_examples=25, deadline=None)
@given(NAMES, PHONES, st.lists(FILLER, min_size=2, max_size=12), st.booleans())
def test_property_no_registered_name_or_phone_survives_the_package_masking(
        name, phone, words, in_trait):
    """Wherever the user's text puts a registered person (whole, first name, last name) and a
    phone number — evidence, the core, a trait — the masked package holds neither."""
    first, last = name.split(" ", 1)
    text = " ".join([*words, f"{name} rief an,", f"Nummer {phone}.", first, "lachte.",
                     f"Später kam {last}."])
    profile = Profile(traits=[Trait("trait_1", "naehe", f"oft {first}" if in_trait else "warm")])
    profile.core.value = f"Schreibt über {first}."
    package = pkg.build_package(profile, governance="advising", lifecycle="confirmed",
                                mode="review", evidence=[pkg.EvidenceText(
                                    "entry:e:v", "entry", text, 1.0, "journal")],
                                signals={}, max_chars=12000, package_id="ppkg_x")
    masker = Masker(NameIndex([name], [first, last]))
    dumped = pkg.dumps(pkg.mask_package(package, masker.mask))
    digits = "".join(c for c in phone if c.isdigit())
    assert first not in dumped and last not in dumped
    assert digits[-7:] not in "".join(c for c in dumped if c.isdigit())
