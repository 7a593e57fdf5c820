"""The interaction profile (issue 16 item 6): labelled product defaults and the user's own
preferences fill the responder's `interaction_hint`; observations are governed; silence is
no signal."""

from __future__ import annotations

import pytest

from app.profiles.interaction import profile as interaction
from tests.conftest import AUTH
from tests.pipeline_support import fake_app, instructions, open_chat


async def test_the_responder_prompt_carries_defaults_and_the_users_preference(
        fake_model, make_settings, aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    client = chat.client
    fake_model.always("responder", "Schön.")
    sent = await chat.send("Hallo, ich erzähle dir von heute.")
    await chat.response(sent)
    await chat.settle()
    system = instructions(fake_model.chats("responder")[-1])
    assert "Wie dieser Mensch angesprochen werden möchte:" in system  # Nova speaks German
    assert "Antworte kurz: zwei bis vier Sätze, außer der Mensch möchte mehr. " \
        "(Voreinstellung)" in system
    assert "Höchstens eine Anschlussfrage" in system and "hör zu" in system

    response = await client.put("/api/profile/interaction/prefs/answer_length", headers=AUTH,
                                json={"value": "Gern ausführlich, mit Details."})
    assert response.status == 200
    sent = await chat.send("Und noch etwas.")
    await chat.response(sent)
    await chat.settle()
    system = instructions(fake_model.chats("responder")[-1])
    assert "- Gern ausführlich, mit Details." in system
    assert "zwei bis vier Sätze" not in system  # the user's preference replaced the default
    assert "Höchstens eine Anschlussfrage" in system  # the other defaults stay


@pytest.mark.parametrize("mode,fresh,over_own", [
    ("learning", "applied", "suggested"),
    ("advising", "suggested", "suggested"),
    ("frozen", "ignored", "ignored"),
])
async def test_observations_under_each_governance(client, mode, fresh, over_own):
    body = await (await client.get("/api/profile/interaction", headers=AUTH)).json()
    assert body["governance"] == "advising"  # the default
    await client.put("/api/profile/interaction/prefs/listening", headers=AUTH,
                     json={"value": "Frag ruhig nach."})
    await client.put("/api/profile/interaction/governance", headers=AUTH,
                     json={"governance": mode})
    first = await (await client.post("/api/profile/interaction/observations", headers=AUTH,
                                     json={"key": "answer_length", "value": "kürzer"})).json()
    assert first["outcome"] == fresh
    second = await (await client.post("/api/profile/interaction/observations", headers=AUTH,
                                      json={"key": "listening", "value": "still sein"})).json()
    assert second["outcome"] == over_own
    assert second["prefs"]["listening"]["value"] == "Frag ruhig nach."  # the user's own stays
    assert ("answer_length" in second["prefs"]) is (fresh == "applied")
    expected = [o for o in (fresh, over_own) if o == "suggested"]
    assert len(second["suggestions"]) == len(expected)
    if second["suggestions"]:
        sid = second["suggestions"][-1]["suggestion_id"]
        accepted = await (await client.post(
            f"/api/profile/interaction/suggestions/{sid}/accept", headers=AUTH)).json()
        assert accepted["prefs"]["listening"] == {**accepted["prefs"]["listening"],
                                                  "value": "still sein", "origin": "accepted"}


async def test_bad_interaction_input_writes_nothing(client):
    before = await (await client.get("/api/profile/interaction", headers=AUTH)).json()
    for method, path, body, status in [
            ("PUT", "/api/profile/interaction/prefs/Bad Key", {"value": "x"}, 400),
            ("PUT", "/api/profile/interaction/prefs/answer_length", {"value": " "}, 400),
            ("DELETE", "/api/profile/interaction/prefs/answer_length", None, 404),
            ("PUT", "/api/profile/interaction/governance", {"governance": "x"}, 400),
            ("POST", "/api/profile/interaction/observations", {"key": "a"}, 400),
            ("POST", "/api/profile/interaction/suggestions/isug_x/accept", None, 404)]:
        response = await client.request(method, path, headers=AUTH, json=body)
        assert response.status == status, (path, await response.text())
        assert "error" in await response.json()
    assert await (await client.get("/api/profile/interaction", headers=AUTH)).json() == before


def test_the_hint_is_english_for_an_english_character_and_lists_extra_preferences():
    profile = interaction.InteractionProfile(
        prefs={"humour": interaction.Pref("Dry jokes welcome.", "manual")})
    text = interaction.hint(profile, "en")
    assert text.splitlines()[0] == "How this person likes to be answered:"
    assert "(product default)" in text and text.endswith("- Dry jokes welcome.")
