"""The server's prompt cache asked for (issue 36): llama.cpp's `cache_prompt` to a local
OpenAI-compatible server (never to a remote one), Ollama's `keep_alive`."""

from __future__ import annotations

import pytest

from app.llm import Gateway
from app.llm.providers.ollama import KEEP_ALIVE
from app.llm.providers.openai import OpenAIProvider
from app.llm.types import Call

HI = [{"role": "user", "content": "Hallo"}]


@pytest.fixture(params=["openai", "ollama"])
def dialect(request) -> str:
    return request.param


@pytest.fixture
async def gateway(fake_model, make_settings, dialect):
    async with Gateway(make_settings(**fake_model.overrides(dialect))) as gateway:
        yield gateway


async def test_a_local_openai_server_is_asked_to_keep_the_prompt(gateway, fake_model, dialect):
    await gateway.complete("responder", HI, max_tokens=16, temperature=0.2)
    [request] = fake_model.chats()
    if dialect == "ollama":
        assert request.body["keep_alive"] == KEEP_ALIVE
    else:
        assert request.body["cache_prompt"] is True


def test_a_remote_server_never_gets_cache_prompt(make_settings):
    provider = OpenAIProvider(url="https://api.openai.com/v1", model="gpt",
                              settings=make_settings(), session=None, api_key=None)
    call = Call(purpose="responder", messages=HI, max_tokens=16, temperature=0.2)
    assert "cache_prompt" not in provider._payload(call, False)
