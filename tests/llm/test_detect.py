"""Auto-detection of a local model server: fake servers on free ports stand in for Ollama
(11434) and llama.cpp (8080); start-up never waits for the probe."""

from __future__ import annotations

import socket

import pytest

from app.api.app_keys import GATEWAY
from app.core.settings import SettingsError
from app.llm import Gateway
from app.llm.choice import ModelChoice
from app.llm.detect import Detected
from app.llm.views import ModelInfo
from app.wiring.server import create_app
from tests.conftest import AUTH as ADMIN
from tests.conftest import TOKEN
from tests.fakemodel import Fault


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def probing(make_settings):
    def settings(ollama: str, openai: str, **more):
        return make_settings(llm_provider=None, llm_probe_ollama_url=ollama,
                             llm_probe_openai_url=openai, **more)

    return settings


async def test_ollama_is_preferred_when_both_answer(start_fake_model, probing):
    ollama = await start_fake_model(models=("llama3.1:8b", "qwen"))
    llama_cpp = await start_fake_model()
    async with Gateway(probing(ollama.url, llama_cpp.url)) as gateway:
        await gateway.ready()
        assert gateway.info() == ModelInfo(provider="ollama", model="llama3.1:8b", offline=False)
        assert gateway.describe().detected == [
            Detected(provider="ollama", url=ollama.url, models=["llama3.1:8b", "qwen"]),
            Detected(provider="openai", url=llama_cpp.url, models=["fake"])]
        completion = await gateway.complete("responder", [{"role": "user", "content": "hi"}],
                                            max_tokens=8)
    assert completion.provider == "ollama"
    assert ollama.chats()[0].body["model"] == "llama3.1:8b" and llama_cpp.chats() == []


async def test_an_openai_style_server_is_used_when_ollama_is_absent(start_fake_model, probing):
    llama_cpp = await start_fake_model()
    async with Gateway(probing(closed_port_url(), llama_cpp.url)) as gateway:
        completion = await gateway.complete("responder", [{"role": "user", "content": "hi"}],
                                            max_tokens=8)
    assert completion.provider == "openai" and completion.model == "fake"
    assert llama_cpp.chats()[0].path == "/v1/chat/completions"


async def test_nothing_found_means_offline(probing):
    async with Gateway(probing(closed_port_url(), closed_port_url())) as gateway:
        completion = await gateway.complete("responder", [{"role": "user", "content": "hi"}],
                                            max_tokens=32)
        assert gateway.describe().detected == []
    assert completion.provider == "offline"


async def test_a_server_without_models_is_not_chosen_and_llm_model_wins(start_fake_model,
                                                                        probing):
    empty_ollama = await start_fake_model(models=())
    llama_cpp = await start_fake_model(models=("a", "b"))
    async with Gateway(probing(empty_ollama.url, llama_cpp.url, llm_model="b")) as gateway:
        await gateway.ready()
        assert gateway.info().provider == "openai" and gateway.info().model == "b"


async def test_a_hanging_server_neither_delays_start_up_nor_calls(start_fake_model, probing):
    hanging = await start_fake_model()
    hanging.metadata_fault = Fault.hang()
    async with Gateway(probing(hanging.url, hanging.url, llm_probe_timeout=0.2)) as gateway:
        assert gateway.describe().detecting is True  # start() returned at once
        completion = await gateway.complete("responder", [{"role": "user", "content": "hi"}],
                                            max_tokens=32)
        assert completion.provider == "offline"
        assert gateway.describe().detecting is False


async def test_llm_url_is_probed_in_both_dialects(start_fake_model, probing):
    server = await start_fake_model()
    settings = probing(closed_port_url(), closed_port_url(), llm_url=server.url)
    async with Gateway(settings) as gateway:
        await gateway.ready()
        assert gateway.info().provider == "ollama"  # the fake speaks both; Ollama first
        assert gateway.provider.url == server.url


async def test_health_reports_the_detected_provider(aiohttp_client, start_fake_model, probing):
    llama_cpp = await start_fake_model()
    client = await aiohttp_client(create_app(probing(closed_port_url(), llama_cpp.url),
                                             local_token=TOKEN))
    await client.app[GATEWAY].ready()
    body = await (await client.get("/api/health", headers=ADMIN)).json()
    assert body["llm"] == {"provider": "openai", "model": "fake", "offline": False,
                           "task_model": None}


async def test_a_switch_changes_the_gateways_model_choice_and_never_the_settings(
        start_fake_model, probing):
    server = await start_fake_model()
    settings = probing(closed_port_url(), closed_port_url())
    at_start = settings.values()
    async with Gateway(settings) as gateway:
        with pytest.raises(ValueError, match="port"):
            await gateway.switch(llm_provider="openai", port=1)
        with pytest.raises(SettingsError, match="llm_provider"):
            await gateway.switch(llm_provider="gpt")
        assert gateway.choice == ModelChoice.of(settings) and gateway.provider.offline

        await gateway.switch(llm_provider="openai", llm_url=server.url, llm_model="fake")
        assert (gateway.choice.llm_provider, gateway.choice.llm_url) == ("openai", server.url)
        assert gateway.info() == ModelInfo(provider="openai", model="fake", offline=False)
        assert gateway.auto_detect is False
        assert gateway.settings is settings and settings.values() == at_start
        assert settings.llm_provider is None and gateway.settings.source("llm_url") == "default"
