"""The privacy gateway (SPEC §7): for a remote provider the whole prompt goes out masked, the
reply is demasked, and a reply with a plaintext identity is blocked (fail closed)."""

from __future__ import annotations

import os

import msgspec
import pytest

from app.llm import Gateway, ModelError
from app.llm.gateway import is_local
from app.llm.privacy import IDENTITY_FILE, IdentityList, Masker
from tests.fakemodel import Reply

PERSONAL = ("Ich bin Anna Schmidt (anna.schmidt@example.org), Tel. +49 171 1234567 oder "
            "030 / 12 34 56 78. Annas Bruder Paul wohnt in der Hauptstraße 12a, 10115 Berlin. "
            "Meine IBAN: DE89 3704 0044 0532 0130 00. Die Prüfung ist am 12.03.2024 um 9:30.")
IDENTITIES = ("anna.schmidt@example.org", "+49 171 1234567", "030 / 12 34 56 78", "Anna",
              "Schmidt", "Paul", "Hauptstraße 12a", "10115 Berlin", "DE89 3704 0044 0532 0130 00")


def test_every_kind_of_identity_is_masked_and_comes_back_exactly():
    masker = Masker(["Anna Schmidt", "Anna", "Paul"])
    masked = masker.mask(PERSONAL)
    for identity in IDENTITIES:
        assert identity not in masked
    assert "[PERSON_1]" in masked and "[EMAIL_1]" in masked and "[IBAN_1]" in masked
    assert "[PHONE_2]" in masked and "[ADDRESS_1]" in masked
    assert "am 12.03.2024 um 9:30" in masked  # dates and times are no phone numbers
    assert masker.unmask(masked) == PERSONAL


def test_the_same_value_gets_the_same_placeholder_across_messages():
    masker = Masker(["Paul"])
    first, second = masker.mask_messages([
        {"role": "system", "content": "Der Nutzer heißt Paul."},
        {"role": "user", "content": "paul hier, schreib an paul@example.org"}])
    assert first["content"] == "Der Nutzer heißt [PERSON_1]."
    assert second["content"] == "[PERSON_1] hier, schreib an [EMAIL_1]"


def test_a_reply_with_a_plaintext_identity_is_a_leak():
    masker = Masker(["Anna"])
    masker.mask("Anna schreibt von anna@example.org")
    assert masker.leaks("Hallo [PERSON_1]!") == []
    assert masker.leaks("Hallo ANNA!") == ["PERSON"]
    assert masker.leaks("Schreib an Anna@Example.org") == ["PERSON", "EMAIL"]
    with pytest.raises(ModelError) as caught:
        masker.check("Liebe Anna")
    assert caught.value.code == "privacy_blocked"
    assert "Anna" not in caught.value.message  # the error never repeats the identity


def test_demasking_json_escapes_what_it_puts_back():
    masker = Masker(['Ben "Benny" Baum'])
    masker.mask('Ben "Benny" Baum')
    assert msgspec.json.decode(masker.unmask('{"name": "[PERSON_1]"}', json_string=True)) == \
        {"name": 'Ben "Benny" Baum'}


def test_the_identity_list_comes_from_the_setting_and_the_file(tmp_path):
    identities = IdentityList(tmp_path, "Anna, Paul ,,")
    assert identities.names() == ("Anna", "Paul")
    path = tmp_path / IDENTITY_FILE
    path.write_text("# family\nGisela Meier\nX  # too short\n", encoding="utf-8")
    assert identities.names() == ("Anna", "Paul", "Gisela Meier")
    path.write_text("Kurt\n", encoding="utf-8")
    os.utime(path, (1, 1))  # a changed file is read again, whatever its mtime
    assert identities.names() == ("Anna", "Paul", "Kurt")
    path.unlink()
    assert identities.names() == ("Anna", "Paul")


@pytest.mark.parametrize(("url", "local"), [
    ("http://127.0.0.1:8080", True), ("http://localhost:11434", True),
    ("http://192.168.1.20:8000", True), ("http://gpu-box.lan:8080", True),
    ("http://[::1]:8080", True), ("https://openrouter.ai/api/v1", False),
    ("http://8.8.8.8", False), ("https://llm.example.com", False), (None, False)])
def test_only_servers_on_this_machine_or_network_count_as_local(url, local):
    assert is_local(url) is local


@pytest.fixture
async def remote(fake_model, make_settings, data_dir):
    (data_dir / IDENTITY_FILE).write_text("Paul\n", encoding="utf-8")
    settings = make_settings(**fake_model.overrides(llm_remote=True,
                                                    privacy_identities="Anna Schmidt, Anna"))
    async with Gateway(settings) as gateway:
        assert gateway.remote
        yield gateway


PROMPT = [{"role": "system", "content": "Du sprichst mit Anna. Ihr Bruder ist Paul."},
          {"role": "user", "content": "[1] USER (neutral): Hallo\n[2] USER (neutral): " + PERSONAL}]


async def test_nothing_identifying_leaves_the_machine_and_the_reply_is_demasked(remote,
                                                                               fake_model):
    # The system prompt comes first: Anna is [PERSON_1], Paul [PERSON_2].
    fake_model.script("responder", "Hallo [PERSON_1]! Grüß [PERSON_2] und schreib an [EMAIL_1].")
    result = await remote.complete("responder", PROMPT, max_tokens=200)
    assert result.text == "Hallo Anna! Grüß Paul und schreib an anna.schmidt@example.org."
    [request] = fake_model.chats()
    sent = "\n".join(m["content"] for m in request.messages)
    for identity in IDENTITIES:
        assert identity not in sent
    assert request.messages[0]["content"] == \
        "Du sprichst mit [PERSON_1]. Ihr Bruder ist [PERSON_2]."
    assert remote.traces.list()[0]["masked"] == 8  # 3 names, e-mail, 2 phones, address, IBAN


async def test_a_reply_with_a_plaintext_identity_is_blocked(remote, fake_model):
    fake_model.script("responder", "Hallo Anna!")
    with pytest.raises(ModelError) as caught:
        await remote.complete("responder", PROMPT, max_tokens=200)
    assert caught.value.code == "privacy_blocked"
    assert remote.traces.list()[0]["error_code"] == "privacy_blocked"


class Note(msgspec.Struct):
    person: str
    text: str


async def test_structured_replies_are_checked_and_demasked_too(remote, fake_model):
    fake_model.script("agent", {"person": "[PERSON_2]", "text": "Ruf [PHONE_1] an"},
                      {"person": "Paul", "text": ""})
    result = await remote.complete("agent", PROMPT, schema=Note, max_tokens=200)
    assert result.value == Note("Paul", "Ruf +49 171 1234567 an")
    with pytest.raises(ModelError) as caught:
        await remote.complete("agent", PROMPT, schema=Note, max_tokens=200)
    assert caught.value.code == "privacy_blocked"


async def test_a_streamed_reply_is_demasked_across_piece_boundaries(remote, fake_model):
    fake_model.script("responder", Reply("Hallo [PERSON_1], wie geht es [PERSON_2]?",
                                         chunks=["Hallo [PER", "SON_1], wie g", "eht es [",
                                                 "PERSON_2]?"]))
    pieces = [piece async for piece in remote.stream("responder", PROMPT, max_tokens=200)]
    assert "".join(pieces) == "Hallo Anna, wie geht es Paul?"
    assert not any("[" in piece for piece in pieces)


async def test_a_streamed_leak_stops_the_stream_before_the_name_is_shown(remote, fake_model):
    fake_model.script("responder", Reply("Also, liebe Anna, das war so.",
                                         chunks=["Also, liebe A", "nna, das war so."]))
    shown = []
    with pytest.raises(ModelError) as caught:
        async for piece in remote.stream("responder", PROMPT, max_tokens=200):
            shown.append(piece)
    assert caught.value.code == "privacy_blocked"
    assert "Anna" not in "".join(shown)


async def test_a_local_provider_gets_the_prompt_as_it_is(fake_model, make_settings):
    async with Gateway(make_settings(**fake_model.overrides(
            privacy_identities="Anna"))) as gateway:
        assert not gateway.remote
        await gateway.complete("responder", PROMPT, max_tokens=200)
    assert fake_model.chats()[0].messages == PROMPT
