"""The privacy gateway (design §7a) inside the model gateway: for a remote provider the whole
prompt goes out masked with the user's registry and the detectors, the reply is checked
before demasking, one corrective retry, then `privacy_blocked` (fail closed).

A remote provider is never told a call's purpose, so the fake answers its calls from the
steps scripted for `UNNAMED`; the local detect role is told (`privacy_detect`)."""

from __future__ import annotations

import msgspec
import pytest

from app.llm import Gateway, ModelError
from app.llm.detect import is_local
from app.llm.guard import PRIVACY_RETRY_PROMPT
from app.llm.privacy import IdentityRegistry, Masker, NameIndex, Person
from app.storage.database import Database
from tests.fakemodel import UNNAMED, Fault, Reply
from tests.privacy_support import leaked

PERSONAL = ("Ich bin Anna Schmidt (anna.schmidt@example.org), Tel. +49 171 1234567 oder "
            "030 / 12 34 56 78. Annas Bruder Paul wohnt in der Hauptstraße 12a, 10115 Berlin. "
            "Meine IBAN: DE89 3704 0044 0532 0130 00. Die Prüfung ist am 12.03.2024 um 9:30.")
IDENTITIES = ("anna.schmidt@example.org", "+49 171 1234567", "030 / 12 34 56 78", "Anna",
              "Schmidt", "Paul", "Hauptstraße 12a", "10115 Berlin", "DE89 3704 0044 0532 0130 00")


def test_every_kind_of_identity_is_masked_and_comes_back_exactly():
    masker = Masker(NameIndex(["Anna Schmidt", "Anna", "Paul"]))
    masked = masker.mask(PERSONAL)
    for identity in IDENTITIES:
        assert identity not in masked
    assert "[PERSON_1]" in masked and "[EMAIL_1]" in masked and "[IBAN_1]" in masked
    assert "[PHONE_2]" in masked and "[ADDRESS_1]" in masked
    assert "am 12.03.2024 um 9:30" in masked  # dates and times are no phone numbers
    assert masker.unmask(masked) == PERSONAL


def test_the_same_value_gets_the_same_placeholder_across_messages():
    masker = Masker(NameIndex(["Paul"]))
    first, second = masker.mask_messages([
        {"role": "system", "content": "Der Nutzer heißt Paul."},
        {"role": "user", "content": "paul hier, schreib an paul@example.org"}])
    assert first["content"] == "Der Nutzer heißt [PERSON_1]."
    assert second["content"] == "[PERSON_1] hier, schreib an [EMAIL_1]"


def test_a_reply_with_a_plaintext_identity_is_a_leak():
    masker = Masker(NameIndex(["Anna"]))
    masker.mask("Anna schreibt von anna@example.org")
    assert masker.leaks("Hallo [PERSON_1]!") == []
    assert masker.leaks("Hallo ANNA!") == ["PERSON"]
    assert masker.leaks("Schreib an Anna@Example.org") == ["EMAIL"]  # the name is its part
    with pytest.raises(ModelError) as caught:
        masker.check("Liebe Anna")
    assert caught.value.code == "privacy_blocked"
    assert "Anna" not in caught.value.message  # the error never repeats the identity


def test_demasking_json_escapes_what_it_puts_back():
    masker = Masker(NameIndex(['Ben "Benny" Baum']))
    masker.mask('Ben "Benny" Baum')
    assert msgspec.json.decode(masker.unmask('{"name": "[PERSON_1]"}', json_string=True)) == \
        {"name": 'Ben "Benny" Baum'}


@pytest.mark.parametrize(("url", "local"), [
    ("http://127.0.0.1:8080", True), ("http://localhost:11434", True),
    ("http://192.168.1.20:8000", True), ("http://gpu-box.lan:8080", True),
    ("http://[::1]:8080", True), ("https://openrouter.ai/api/v1", False),
    ("http://8.8.8.8", False), ("https://llm.example.com", False), (None, False)])
def test_only_servers_on_this_machine_or_network_count_as_local(url, local):
    assert is_local(url) is local


@pytest.fixture
async def registry(data_dir):
    db = Database(data_dir / "registry.db")
    await db.open()
    registry = IdentityRegistry(db)
    await registry.replace("local", [Person("Anna Schmidt", ["Anna"]), Person("Paul")])
    yield registry
    await db.close()


@pytest.fixture
async def remote(fake_model, make_settings, registry):
    settings = make_settings(**fake_model.overrides(llm_remote=True))
    async with Gateway(settings, registry) as gateway:
        assert gateway.remote
        yield gateway


PROMPT = [{"role": "system", "content": "Du sprichst mit Anna. Ihr Bruder ist Paul."},
          {"role": "user", "content": "[1] USER (neutral): Hallo\n[2] USER (neutral): " + PERSONAL}]


async def test_nothing_identifying_leaves_the_machine_and_the_reply_is_demasked(remote,
                                                                               fake_model):
    # The system prompt comes first: Anna is [PERSON_1], Paul [PERSON_2].
    fake_model.script(UNNAMED, "Hallo [PERSON_1]! Grüß [PERSON_2] und schreib an [EMAIL_1].")
    result = await remote.complete("responder", PROMPT, max_tokens=200, user_id="local")
    assert result.text == "Hallo Anna! Grüß Paul und schreib an anna.schmidt@example.org."
    [request] = fake_model.chats()
    sent = "\n".join(m["content"] for m in request.messages)
    for identity in IDENTITIES:
        assert identity not in sent
    assert request.messages[0]["content"] == \
        "Du sprichst mit [PERSON_1]. Ihr Bruder ist [PERSON_2]."
    assert remote.traces.list()[0].masked == 8  # 3 names, e-mail, 2 phones, address, IBAN


async def test_a_leaking_reply_gets_one_corrective_retry(remote, fake_model):
    fake_model.script(UNNAMED, "Hallo Anna!", "Hallo [PERSON_1]!")
    result = await remote.complete("responder", PROMPT, max_tokens=200, user_id="local")
    assert result.text == "Hallo Anna!"
    first, retry = fake_model.chats()
    assert retry.messages[:-1] == first.messages  # the leaking reply is not sent back
    assert retry.messages[-1] == {"role": "user", "content": PRIVACY_RETRY_PROMPT}
    assert remote.traces.list()[0].privacy_retry is True
    counters = remote.privacy_stats.of("local").as_dict()
    assert (counters["replies_blocked"], counters["retries"], counters["calls_blocked"]) == \
        (1, 1, 0)


async def test_a_reply_that_leaks_also_after_the_retry_is_blocked(remote, fake_model):
    fake_model.script(UNNAMED, "Hallo Anna!", "Liebe anna, hallo")
    with pytest.raises(ModelError) as caught:
        await remote.complete("responder", PROMPT, max_tokens=200, user_id="local")
    assert caught.value.code == "privacy_blocked"
    assert "anna" not in caught.value.message.casefold()  # the error never repeats it
    assert len(fake_model.chats()) == 2
    assert remote.traces.list()[0].error_code == "privacy_blocked"
    counters = remote.privacy_stats.of("local").as_dict()
    assert (counters["replies_blocked"], counters["calls_blocked"]) == (2, 1)


async def test_a_homonym_in_the_reply_is_no_leak(fake_model, make_settings, registry):
    await registry.replace("local", [Person("Herr Freitag")])
    async with Gateway(make_settings(**fake_model.overrides(llm_remote=True)),
                       registry) as gateway:
        fake_model.script(UNNAMED, "Dann sehen wir [PERSON_1] am Freitag.")
        result = await gateway.complete(
            "responder", [{"role": "user", "content": "Herr Freitag kommt am Freitag."}],
            max_tokens=100, user_id="local")
    assert result.text == "Dann sehen wir Freitag am Freitag."
    assert fake_model.chats()[0].messages[0]["content"] == "Herr [PERSON_1] kommt am Freitag."


async def test_a_remote_call_without_its_user_sends_nothing(remote, fake_model):
    with pytest.raises(ModelError) as caught:
        await remote.complete("responder", PROMPT, max_tokens=200)
    assert caught.value.code == "privacy_blocked"
    assert fake_model.chats() == []


class Note(msgspec.Struct):
    person: str
    text: str


async def test_structured_replies_are_checked_and_demasked_too(remote, fake_model):
    fake_model.script(UNNAMED, {"person": "[PERSON_2]", "text": "Ruf [PHONE_1] an"})
    result = await remote.complete("agent", PROMPT, schema=Note, max_tokens=200,
                                   user_id="local")
    assert result.value == Note("Paul", "Ruf +49 171 1234567 an")
    fake_model.script(UNNAMED, {"person": "Paul", "text": ""}, {"person": "Paul", "text": ""})
    with pytest.raises(ModelError) as caught:
        await remote.complete("agent", PROMPT, schema=Note, max_tokens=200, user_id="local")
    assert caught.value.code == "privacy_blocked"


async def test_a_streamed_reply_is_demasked_across_piece_boundaries(remote, fake_model):
    fake_model.script(UNNAMED, Reply("Hallo [PERSON_1], wie geht es [PERSON_2]?",
                                         chunks=["Hallo [PER", "SON_1], wie g", "eht es [",
                                                 "PERSON_2]?"]))
    pieces = [piece async for piece in remote.stream("responder", PROMPT, max_tokens=200,
                                                     user_id="local")]
    assert "".join(pieces) == "Hallo Anna, wie geht es Paul?"
    assert not any("[" in piece for piece in pieces)


async def shown_until_blocked(remote: Gateway, max_tokens: int = 200) -> str:
    """What a streamed responder call showed before it ended in `privacy_blocked`."""
    shown = []
    with pytest.raises(ModelError) as caught:
        async for piece in remote.stream("responder", PROMPT, max_tokens=max_tokens,
                                         user_id="local"):
            shown.append(piece)
    assert caught.value.code == "privacy_blocked"
    return "".join(shown)


async def test_a_streamed_leak_stops_the_stream_before_the_name_is_shown(remote, fake_model):
    leak = Reply("Also, liebe Anna, das war so.", chunks=["Also, liebe A", "nna, das war so."])
    fake_model.script(UNNAMED, leak, leak)  # the retry leaks as well
    assert "Anna" not in await shown_until_blocked(remote)
    assert len(fake_model.chats()) == 2


@pytest.mark.parametrize("name", ["An\u00adna", "A\u200bn\u200bn\u200ba", "Аnnа", "ＡＮＮＡ"])
async def test_a_disguised_name_in_a_streamed_reply_is_stopped_before_it_shows(
        remote, fake_model, name):
    """The reply check reads the normalised view too, and a stream holds back enough for a
    name with invisible characters between its letters."""
    text = f"Also, liebe {name}, das war so, und es war ein langer Tag für uns alle."
    cut = text.index(name) + 2
    leak = Reply(text, chunks=[text[:cut], text[cut:]])
    fake_model.script(UNNAMED, leak, leak)
    shown = await shown_until_blocked(remote)
    assert not leaked(["Anna"], shown) and name[:2] not in shown


async def test_a_streamed_leak_after_shown_pieces_is_not_retried(remote, fake_model):
    fake_model.script(UNNAMED, Reply("Hallo du, wie geht es dir heute? Anna!",
                                         chunks=["Hallo du, wie geht es dir heute? ", "Anna!"]))
    shown = []
    with pytest.raises(ModelError) as caught:
        async for piece in remote.stream("responder", PROMPT, max_tokens=200, user_id="local"):
            shown.append(piece)
    assert caught.value.code == "privacy_blocked"
    assert shown and "Anna" not in "".join(shown)
    assert len(fake_model.chats()) == 1


async def test_a_local_provider_gets_the_prompt_as_it_is(fake_model, make_settings):
    async with Gateway(make_settings(**fake_model.overrides())) as gateway:
        assert not gateway.remote
        await gateway.complete("responder", PROMPT, max_tokens=200)
    assert fake_model.chats()[0].messages == PROMPT


async def test_the_local_detect_role_adds_names_to_mask(fake_model, make_settings, registry):
    # The fake serves both: the remote provider (llm_remote) and the local detect server.
    fake_model.script("privacy_detect", {"names": ["Zoltan", "Erfunden"]})
    fake_model.script(UNNAMED, "Grüß [PERSON_1]!")
    settings = make_settings(**fake_model.overrides(llm_remote=True,
                                                    privacy_detect_url=fake_model.url))
    async with Gateway(settings, registry) as gateway:
        result = await gateway.complete(
            "responder", [{"role": "user", "content": "Zoltan war heute hier."}],
            max_tokens=100, user_id="local")
    assert result.text == "Grüß Zoltan!"
    [asked] = fake_model.chats("privacy_detect")
    assert "Zoltan war heute hier." in asked.messages[-1]["content"]  # local: plain text
    [sent] = fake_model.chats(UNNAMED)  # a remote provider is never told the purpose
    assert sent.messages[0]["content"] == "[PERSON_1] war heute hier."


async def test_a_failing_detect_role_leaves_the_detectors_and_a_remote_one_is_refused(
        fake_model, make_settings, registry):
    fake_model.always("privacy_detect", Fault.status(500))
    settings = make_settings(**fake_model.overrides(llm_remote=True, model_retries=0,
                                                    privacy_detect_url=fake_model.url))
    async with Gateway(settings, registry) as gateway:
        await gateway.complete("responder", [{"role": "user", "content": "Anna, 0170/1234567"}],
                               max_tokens=100, user_id="local")
    assert fake_model.chats(UNNAMED)[0].messages[0]["content"] == "[PERSON_1], [PHONE_1]"
    remote_detect = make_settings(**fake_model.overrides(
        llm_remote=True, privacy_detect_url="https://names.example.com/v1"))
    async with Gateway(remote_detect, registry) as gateway:
        assert gateway.name_detector is None


async def test_a_long_stream_is_checked_piece_by_piece_up_to_its_end(remote, fake_model):
    filler = "Das ist ein ruhiger Satz ohne Namen. " * 12
    chunks = [filler[i:i + 40] for i in range(0, len(filler), 40)] + ["Grüß An", "na von mir."]
    leak = Reply(filler + "Grüß Anna von mir.", chunks=chunks)
    fake_model.script(UNNAMED, leak, leak)
    shown = await shown_until_blocked(remote, max_tokens=400)
    assert shown and "Anna" not in shown
