"""The task model (issue 36 item 4, as Open WebUI's): with `llm_task_model` set, the structured
purposes (`app.wiring.purposes.TASK_PURPOSES`) go to that second model — on the main server or
on `llm_task_url` — and the reply to the main one; health, `GET /api/llm`, the traces and the
egress log name the model each call used; a task server off this network is masked and gated
like a remote main one. Counted on the fake model server, which records each request's body
(its `model`)."""

from __future__ import annotations

import pytest

from app.api.app_keys import GATEWAY
from app.core.settings import load_settings
from app.llm import Gateway, ModelError
from app.llm.egress_log import EgressCall
from app.llm.privacy import IdentityRegistry, Person
from app.llm.providers import base as providers_base
from app.llm.views import ModelInfo
from app.pipeline.schemas import Perception
from app.storage.database import Database
from app.wiring.purposes import TASK_PURPOSES, model_schemas
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import UNNAMED
from tests.pipeline_support import open_chat

# What a person reads is never the task model's.
FREE_TEXT = ("responder", "corrector", "journal_generate", "summary")


def test_the_task_purposes_are_the_structured_ones_and_the_reply_is_not_among_them():
    assert TASK_PURPOSES == set(model_schemas())
    assert {"perception", "salience", "router", "thinker", "salience_character",
            "journal_reconstruct", "profile_review"} <= TASK_PURPOSES
    assert not TASK_PURPOSES & set(FREE_TEXT)


def models_by_purpose(fake) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for request in fake.chats():
        found.setdefault(request.purpose or UNNAMED, set()).add(request.body["model"])
    return found


async def test_a_turn_asks_the_task_model_for_the_structured_calls_and_the_main_for_the_reply(
        start_fake_model, make_settings, aiohttp_client):
    fake = await start_fake_model(models=("big", "small"))
    app = create_app(make_settings(**fake.overrides(llm_task_model="small")), local_token=TOKEN)
    chat = await open_chat(aiohttp_client, app)

    sent = await chat.send("Wie war dein Tag?")
    await chat.response(sent)
    await chat.settle()

    by_purpose = models_by_purpose(fake)
    assert by_purpose.pop("responder") == {"big"}
    assert {"perception", "thinker"} <= set(by_purpose)
    assert by_purpose and all(models == {"small"} for models in by_purpose.values()), by_purpose
    assert set(by_purpose) <= TASK_PURPOSES

    # The traces say which model answered each call.
    traces = (await chat.get("/api/admin/llm/traces"))["traces"]
    assert {(t["purpose"], t["model"]) for t in traces} == {
        (purpose, "small") for purpose in by_purpose} | {("responder", "big")}

    health = await chat.get("/api/health")
    assert health["llm"] == {"provider": "openai", "model": "big", "offline": False,
                             "task_model": "small"}
    described = await chat.get("/api/llm")
    assert described["task"]["model"] == "small" and described["task"]["url"] == fake.url
    assert described["task"]["remote"] is False
    assert described["configured"]["task_model"] == "small"
    await chat.close()


async def test_without_a_task_model_every_call_goes_to_the_main_one(
        start_fake_model, make_settings, aiohttp_client):
    fake = await start_fake_model(models=("big", "small"))
    app = create_app(make_settings(**fake.overrides()), local_token=TOKEN)
    chat = await open_chat(aiohttp_client, app)
    await chat.response(await chat.send("Wie war dein Tag?"))
    await chat.settle()
    assert set().union(*models_by_purpose(fake).values()) == {"big"}
    assert (await chat.get("/api/health"))["llm"]["task_model"] is None
    assert (await chat.get("/api/llm"))["task"] is None
    await chat.close()


async def test_the_task_model_may_run_on_another_server(start_fake_model, make_settings,
                                                        aiohttp_client):
    main, other = await start_fake_model(), await start_fake_model(models=("small",))
    settings = make_settings(**main.overrides(llm_task_model="small", llm_task_url=other.url,
                                              llm_api_key="sk-main-only"))
    chat = await open_chat(aiohttp_client, create_app(settings, local_token=TOKEN))
    await chat.response(await chat.send("Wie war dein Tag?"))
    await chat.settle()

    assert set(models_by_purpose(main)) == {"responder"}
    assert set(models_by_purpose(other)) <= TASK_PURPOSES and "perception" in \
        models_by_purpose(other)
    # The API key belongs to the main server; the task server never sees it.
    assert all("Authorization" not in r.headers for r in other.requests)
    assert all(r.headers.get("Authorization") == "Bearer sk-main-only" for r in main.chats())
    assert (await chat.get("/api/llm"))["task"]["url"] == other.url
    await chat.close()


# --- the settings page's choice ------------------------------------------------------------


async def test_the_task_model_chosen_in_the_ui_is_kept_and_used_at_once(client, fake_model,
                                                                       settings):
    response = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": fake_model.url, "model": "fake", "task_model": "small"})
    assert response.status == 200, await response.text()
    info = await response.json()
    assert info["task"]["model"] == "small" and info["configured"]["task_model"] == "small"
    assert client.app[GATEWAY].provider_for("perception").model == "small"
    assert client.app[GATEWAY].provider_for("responder").model == "fake"
    reloaded = load_settings({"data_dir": str(settings.data_path)}, env={})
    assert reloaded.llm_task_model == "small" and reloaded.llm_task_url is None

    # Absent keeps it; null removes it.
    await client.put("/api/llm", headers=AUTH, json={"provider": "openai", "url": fake_model.url})
    assert client.app[GATEWAY].choice.llm_task_model == "small"
    response = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": fake_model.url, "task_model": None})
    assert (await response.json())["task"] is None
    assert load_settings({"data_dir": str(settings.data_path)}, env={}).llm_task_model is None


@pytest.mark.parametrize(("task", "code"), [
    ({"task_url": "http://127.0.0.1:9"}, "invalid_setting"),  # which model runs there?
    ({"task_model": "small", "task_url": "ftp://127.0.0.1"}, "invalid_url"),
    ({"task_model": "small", "task_url": "http://user:pw@127.0.0.1:9"}, "url_has_credentials"),
    ({"task_model": 7}, "invalid_request"),
])
async def test_a_bad_task_model_is_refused_and_nothing_changes(client, fake_model, settings,
                                                               task, code):
    config = settings.data_path / "config.toml"
    before = config.read_text() if config.exists() else None
    response = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": fake_model.url, **task})
    assert response.status == 400
    body = await response.json()
    assert body["error"]["code"] == code, body
    assert (config.read_text() if config.exists() else None) == before
    assert client.app[GATEWAY].task_provider is None and client.app[GATEWAY].provider.offline


def test_a_task_url_without_a_task_model_stops_the_start(make_settings):
    with pytest.raises(Exception, match="llm_task_url needs llm_task_model"):
        make_settings(llm_task_url="http://127.0.0.1:8081")


# --- the privacy gateway: a task server off this network ----------------------------------


@pytest.fixture
async def registry(data_dir):
    db = Database(data_dir / "registry.db")
    await db.open()
    registry = IdentityRegistry(db)
    await registry.replace("local", [Person("Anna Schmidt", ["Anna"])])
    yield registry
    await db.close()


PROMPT = [{"role": "system", "content": "Du sprichst mit Anna Schmidt."},
          {"role": "user", "content": "Anna ist heute fröhlich."}]


@pytest.fixture
def off_network(monkeypatch):
    """Make the listed URLs count as off this network. The tests have no server outside this
    machine; which hosts are local is `is_local`'s own test (tests/llm/privacy)."""
    remote: set[str] = set()
    local = providers_base.is_local
    monkeypatch.setattr(providers_base, "is_local",
                        lambda url: local(url) and (url or "").rstrip("/") not in remote)
    return remote


async def test_a_remote_task_server_gets_the_prompt_masked_and_no_registered_name(
        start_fake_model, make_settings, registry, off_network):
    main, task = await start_fake_model(), await start_fake_model(models=("small",))
    off_network.add(task.url)
    noted: list[EgressCall] = []
    settings = make_settings(**main.overrides(llm_task_model="small", llm_task_url=task.url))
    async with Gateway(settings, registry, egress=noted.append,
                       task_purposes={"perception"}) as gateway:
        assert gateway.task_provider is not None and gateway.task_provider.remote
        assert not gateway.remote
        result = await gateway.complete("perception", PROMPT, schema=Perception,
                                        max_tokens=400, user_id="local")
        reply = await gateway.complete("responder", PROMPT, max_tokens=100, user_id="local")
        # Without the user's registry nothing goes to the remote task server (fail closed).
        with pytest.raises(ModelError) as refused:
            await gateway.complete("perception", PROMPT, schema=Perception, max_tokens=400)
        assert refused.value.code == "privacy_blocked"

    assert isinstance(result.value, Perception) and result.model == "small"
    [sent] = task.chats()
    text = "\n".join(m["content"] for m in sent.messages)
    assert "Anna" not in text and "Schmidt" not in text and "[PERSON_1]" in text
    assert sent.purpose is None  # a remote server is not told what a call is for
    # The main server is on this machine: its prompt goes as it is.
    [local] = main.chats()
    assert "Anna Schmidt" in local.messages[0]["content"] and reply.model == "fake"

    perception, responder = noted[:2]
    assert (perception.model, perception.remote, perception.masked) == ("small", True,
                                                                        {"PERSON": 2})
    assert perception.endpoint == task.url.split("//", 1)[1]
    assert (responder.model, responder.remote, responder.masked) == ("fake", False, {})


async def test_a_journal_plans_with_the_smaller_window_of_its_two_models(
        start_fake_model, make_settings):
    main = await start_fake_model(context_length=32768)
    task = await start_fake_model(models=("small",), context_length=16384)
    settings = make_settings(**main.overrides(llm_task_model="small", llm_task_url=task.url,
                                              llm_context=None))
    async with Gateway(settings, task_purposes=TASK_PURPOSES) as gateway:
        both, _ = await gateway.context_window("journal_reconstruct", "journal_generate")
        assert both == 16384
        assert (await gateway.context_window("journal_generate"))[0] == 32768
        assert (await gateway.context_window())[0] == 32768
        assert gateway.known_window() == 16384  # a message goes to both models


async def test_a_detected_server_gets_the_task_model_beside_its_main_one(start_fake_model,
                                                                         make_settings):
    # No provider chosen: auto-detection finds the server, and the task model runs on it.
    found = await start_fake_model(models=("big", "small"))
    settings = make_settings(llm_provider=None, llm_task_model="small",
                             llm_probe_openai_url=found.url,
                             llm_probe_ollama_url="http://127.0.0.1:9")
    async with Gateway(settings, task_purposes=TASK_PURPOSES) as gateway:
        await gateway.ready()
        assert gateway.info() == ModelInfo(provider="openai", model="big", offline=False,
                                           task_model="small")
        assert gateway.provider_for("thinker").url == found.url
        assert gateway.provider_for("responder").model == "big"


async def test_the_task_model_on_the_main_server_gets_its_key(fake_model, make_settings):
    # The configured URL with a trailing slash is still the main server.
    settings = make_settings(**fake_model.overrides(llm_url=fake_model.url + "/",
                                                    llm_task_model="small",
                                                    llm_api_key="sk-main"))
    async with Gateway(settings, task_purposes=TASK_PURPOSES) as gateway:
        await gateway.complete("thinker", PROMPT, max_tokens=50)
    [sent] = fake_model.chats()
    assert sent.body["model"] == "small" and sent.headers["Authorization"] == "Bearer sk-main"
