"""The privacy API (design §7a, §9) and the privacy gateway through the real server: the
registry per user in SQLite, the preview, the counters; with `llm_remote` on, no registered
name leaves in any request body, and a leaking reply gets one retry, then a
`privacy_blocked` notice.

A remote provider is never told a call's purpose (`X-Novaberg-Purpose`): the fake answers
its text calls (the responder's) with `default_text`, its structured ones with neutral
defaults."""

from __future__ import annotations

import json

import pytest

from app.api.app_keys import DB
from app.llm.privacy import LEGACY_FILE
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import UNNAMED
from tests.pipeline_support import fake_app, open_chat
from tests.privacy_support import leaked
from tests.runtime_support import runtime_app

PEOPLE = [{"name": "Anna Schmidt", "aliases": ["Anni"]}, {"name": "Onkel August"},
          {"name": "Frau Dr. Özdemir", "aliases": []}]


def remote_text_calls(fake_model):
    """The text calls a remote provider got: no purpose named, no schema asked."""
    return [r for r in fake_model.chats(UNNAMED) if r.schema is None]


async def put(client, body, headers=AUTH):
    return await client.put("/api/privacy/identities", json=body, headers=headers)


async def test_the_registry_round_trips_and_put_replaces_it(client):
    response = await client.get("/api/privacy/identities", headers=AUTH)
    assert await response.json() == {"names": [], "people": []}
    response = await put(client, {"people": PEOPLE})
    assert response.status == 200
    stored = await response.json()
    assert stored["people"][0] == {"name": "Anna Schmidt", "aliases": ["Anni"]}
    assert stored["names"] == ["Anna Schmidt", "Anni", "Onkel August", "Frau Dr. Özdemir"]
    response = await put(client, {"names": ["  Paul   Meier "]})
    assert (await response.json())["people"] == [{"name": "Paul Meier", "aliases": []}]
    response = await client.get("/api/privacy/identities", headers=AUTH)
    assert (await response.json())["names"] == ["Paul Meier"]


@pytest.mark.parametrize("body", [
    {"names": ["x"]}, {"names": [""]}, {"names": ["Frau"]}, {"names": ["Dr. Prof."]},
    {"names": ["1234"]}, {"names": ["A" * 101]}, {"names": ["Anna\u0000"]},
    {"people": [{"name": "Anna", "age": 3}]}, {"names": "Anna"}, {}, {"names": [], "people": []},
    {"names": [f"Person {i}" for i in range(501)]},
    {"people": [{"name": "Anna", "aliases": [f"A{i}x" for i in range(21)]}]}])
async def test_bad_identities_get_400_and_nothing_is_written(client, body):
    await put(client, {"people": PEOPLE})
    response = await put(client, body)
    assert response.status == 400
    error = (await response.json())["error"]
    assert error["code"] in ("invalid_identities", "invalid_request") and error["message"]
    response = await client.get("/api/privacy/identities", headers=AUTH)
    assert len((await response.json())["people"]) == len(PEOPLE)


@pytest.mark.parametrize(("body", "name"), [
    ({"names": ["Anna", "anna"]}, "anna"),
    ({"people": [{"name": "Anna", "aliases": ["ANNA"]}]}, "ANNA"),
    ({"people": [*PEOPLE, {"name": "Anni"}]}, "Anni"),  # another person's alias
    ({"people": [*PEOPLE, {"name": "Onkel   August"}]}, "Onkel August"),
])
async def test_a_name_given_twice_is_refused_naming_it(client, body, name):
    await put(client, {"people": PEOPLE})
    response = await put(client, body)
    assert response.status == 400
    assert await response.json() == {"error": {
        "code": "duplicate_name", "message": f"the name {name!r} is given twice"}}
    response = await client.get("/api/privacy/identities", headers=AUTH)
    assert len((await response.json())["people"]) == len(PEOPLE)


async def test_not_json_is_400_and_no_token_is_401(client):
    response = await client.put("/api/privacy/identities", data=b"{nope", headers=AUTH)
    assert response.status == 400
    assert (await client.get("/api/privacy/identities")).status == 401
    assert (await client.post("/api/privacy/preview", json={"text": "x"})).status == 401


async def test_each_user_has_a_registry_of_their_own(client):
    await put(client, {"names": ["Anna Schmidt"]})
    db = client.app[DB]
    from app.auth.accounts import add_user_sync
    token = await db.execute_write_fn(lambda conn: add_user_sync(conn, "bert", "secret-pass-1"))
    other = {"Authorization": f"Bearer {token}"}
    assert (await (await client.get("/api/privacy/identities", headers=other)).json())[
        "names"] == []
    preview = await client.post("/api/privacy/preview", json={"text": "Anna kommt."},
                                headers=other)
    assert (await preview.json())["masked"] == "Anna kommt."


async def test_the_preview_shows_what_would_leave_the_machine(client):
    await put(client, {"people": PEOPLE})
    text = "anni und Herr Kowalski: 0170/1234567, am Freitag bei Onkel August, im August."
    response = await client.post("/api/privacy/preview", json={"text": text}, headers=AUTH)
    assert response.status == 200
    body = await response.json()
    assert body["masked"] == ("[PERSON_1] und Herr [PERSON_2]: [PHONE_1], am Freitag bei "
                              "Onkel [PERSON_3], im August.")
    assert [(text[s["start"]:s["end"]], s["kind"], s["placeholder"]) for s in body["spans"]] == [
        ("anni", "PERSON", "[PERSON_1]"), ("Kowalski", "PERSON", "[PERSON_2]"),
        ("0170/1234567", "PHONE", "[PHONE_1]"), ("August", "PERSON", "[PERSON_3]")]


async def test_the_preview_says_why_each_part_is_masked(client):
    """Issue 39, item 6: each part with the characters it replaces and the reason — a
    registered person (in any spelling: maths letters, a look-alike), a name read in its
    context, or the kind of number or address."""
    await put(client, {"people": PEOPLE})
    text = ("𝐀𝐧𝐧𝐚 und AnnI treffen Herr Kowalski, IBAN DE89 3704 0044 0532 0130 00, "
            "Mail an a.b@example.org")
    body = await (await client.post("/api/privacy/preview", json={"text": text},
                                    headers=AUTH)).json()
    assert body["masked"] == ("[PERSON_1] und [PERSON_2] treffen Herr [PERSON_3], IBAN [IBAN_1], "
                              "Mail an [EMAIL_1]")
    assert [(s["text"], s["placeholder"], s["reason"]) for s in body["spans"]] == [
        ("𝐀𝐧𝐧𝐚", "[PERSON_1]", "registered"), ("AnnI", "[PERSON_2]", "registered"),
        ("Kowalski", "[PERSON_3]", "looks_like_name"),
        ("DE89 3704 0044 0532 0130 00", "[IBAN_1]", "IBAN"),
        ("a.b@example.org", "[EMAIL_1]", "EMAIL")]
    assert all(text[s["start"]:s["end"]] == s["text"] for s in body["spans"])


@pytest.mark.parametrize(("body", "status"), [({"text": "   "}, 400), ({"text": 3}, 400),
                                              ({"text": "x", "more": 1}, 400)])
async def test_a_bad_preview_is_refused(client, body, status):
    response = await client.post("/api/privacy/preview", json=body, headers=AUTH)
    assert response.status == status
    assert "error" in await response.json()


async def test_the_deprecated_list_is_imported_once(make_settings, data_dir, aiohttp_client):
    (data_dir / LEGACY_FILE).write_text("# family\nGisela Meier\nX\n", encoding="utf-8")
    settings = make_settings(llm_provider="offline", privacy_identities="Anna, Paul")
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    names = (await (await client.get("/api/privacy/identities", headers=AUTH)).json())["names"]
    assert names == ["Anna", "Paul", "Gisela Meier"]
    await put(client, {"names": ["Paul"]})  # the user removes two
    await client.close()
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))  # a restart
    names = (await (await client.get("/api/privacy/identities", headers=AUTH)).json())["names"]
    assert names == ["Paul"]  # not imported again


async def test_through_the_server_no_registered_name_leaves_in_any_request(
        fake_model, make_settings, aiohttp_client):
    fake_model.default_text = "Schön, dass [PERSON_1] dich besucht hat."
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, llm_remote=True))
    response = await put(chat.client, {"people": PEOPLE})
    assert response.status == 200
    said = ["Anna war heute da, anni bringt Kuchen.", "ANNA SCHMIDT und Onkel August, "
            "Frau Dr. Özdemir rief an: 0170/1234567, Steuer-ID 86095742719."]
    for text in said:
        reply = await chat.response(await chat.send(text))
        # The scripted reply, its placeholder demasked for the user.
        assert reply["text"].startswith("Schön, dass ") and "[PERSON_" not in reply["text"]
    await chat.settle()
    bodies = [json.dumps(r.body, ensure_ascii=False).casefold() for r in fake_model.chats()]
    assert len(bodies) >= 4  # every purpose of both turns, summary included if it ran
    for secret in ("anna", "anni", "schmidt", "özdemir", "august", "1234567", "86095742719"):
        assert not any(secret in body for body in bodies), secret
    stats = await chat.get("/api/privacy/stats")
    assert stats["calls_masked"] == len(bodies)
    assert stats["values_masked"]["PERSON"] >= 4 and stats["values_masked"]["TAXID"] >= 1
    assert "anna" not in json.dumps(stats).casefold()
    await chat.close()


async def test_a_leaking_reply_is_retried_once_then_the_turn_fails_with_privacy_blocked(
        fake_model, make_settings, aiohttp_client):
    fake_model.default_text = "Hallo Anna!"
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings,
                                                       llm_remote=True))
    await put(chat.client, {"names": ["Anna"]})
    message_id = await chat.send("Ich bin Anna.")
    failed = await chat.failure(message_id)
    await chat.settle()
    assert failed["reason"] == "privacy_blocked"
    first, retry = remote_text_calls(fake_model)
    assert "Anna" not in json.dumps(first.body) + json.dumps(retry.body)
    assert len(retry.messages) == len(first.messages) + 1
    assert not any("Hallo Anna" in json.dumps(m) for m in chat.seen)  # nothing of the reply
    stats = await chat.get("/api/privacy/stats")
    assert (stats["replies_blocked"], stats["retries"], stats["calls_blocked"]) == (2, 1, 1)
    await chat.close()


# Each disguise of issue 23 in a chat line, and the registered people it hides.
DISGUISED_PEOPLE = [{"name": "Carla Mustermann"}, {"name": "Anna", "aliases": ["Anni"]},
                    {"name": "Mats Johannsen"}, {"name": "Jürgen Möller"},
                    {"name": "Helga Weiß"}, {"name": "Nele Brinkmann"}, {"name": "Ben Kowalski"},
                    {"name": "Tamsin Roe"}, {"name": "Oskar Lemke"}]
DISGUISES = [
    "Car\u00adla hat mir ihre neue Adresse geschickt",  # soft hyphen
    "Ma\u200bts hat spät angerufen, und Tam\ufeffsin auch",  # zero-width space, BOM
    "Frie und Ma\u200dts und Ma\u200cts",  # zero-width joiner, non-joiner
    "Ｎｅｌｅ hat das Turnier gewonnen",  # fullwidth
    "Оskаr hat den Schlüssel unter die Matte gelegt",  # Cyrillic О and а
    "Κarla? nein: CarlaMustermann steht im Betreff",  # names run together
    "der kleine ben hat heute allein geschafft",  # lower case
    "anna-lena und Annas Bruder, Anni's Katze",  # compound, genitives
    "Juergen und Moeller, Weiss hat gefragt",  # other spellings
    "𝐍𝐞𝐥𝐞 in fett, MÜLLER-LÜDENSCHEIDT? nein: BRINKMANN",  # mathematical bold, capitals
]


async def test_through_the_server_no_disguise_brings_a_registered_name_out(
        fake_model, make_settings, aiohttp_client):
    fake_model.default_text = "Verstehe, [PERSON_1]."
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, llm_remote=True))
    assert (await put(chat.client, {"people": DISGUISED_PEOPLE})).status == 200
    for text in DISGUISES:
        reply = await chat.response(await chat.send(text))
        assert reply["text"]
    await chat.settle()
    bodies = [json.dumps(r.body, ensure_ascii=False) for r in fake_model.chats()]
    assert len(bodies) >= len(DISGUISES)
    names = [n for p in DISGUISED_PEOPLE for n in [p["name"], *p.get("aliases", [])]]
    for body in bodies:
        assert not leaked(names, body)
    stats = await chat.get("/api/privacy/stats")
    assert stats["requests_blocked"] == 0  # the masking caught every one
    await chat.close()


async def test_a_detector_gap_is_refused_by_the_gate_and_the_turn_fails_unsent(
        fake_model, make_settings, aiohttp_client, monkeypatch, caplog):
    """A bug in the registered-name finder (here: it finds nothing): the egress gate refuses
    every request, nothing reaches the remote model, the turn fails with its notice, and
    the warning names the gap without the name."""
    import logging

    from app.llm.privacy import NameIndex

    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings,
                                                       llm_remote=True))
    await put(chat.client, {"names": ["Tamsin Roe"]})
    monkeypatch.setattr(NameIndex, "find_in_view", lambda self, text: iter(()))
    with caplog.at_level(logging.WARNING):
        message_id = await chat.send("Tamsin hat angerufen.")
        failed = await chat.failure(message_id)
        await chat.settle()
    assert failed["reason"] == "privacy_blocked"
    assert not any("tamsin" in json.dumps(r.body).lower() for r in fake_model.chats())
    gaps = [r for r in caplog.records if "detector gap" in r.getMessage()]
    assert gaps and all("tamsin" not in json.dumps(r.__dict__.get("fields", {})).lower()
                        for r in gaps)
    stats = await chat.get("/api/privacy/stats")
    assert stats["requests_blocked"] >= 1 and stats["retries"] == 0
    await chat.close()
