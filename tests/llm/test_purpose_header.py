"""The purpose header `X-Novaberg-Purpose` is a test aid (the fake model answers by it): a
provider sends it only with the test setting `llm_test_purpose_header`, and never to a
remote provider, one marked `llm_remote` or one on a host off this network, with the setting
on or not. Checked on the wire: the fake model records what arrives.

Host names reach the fake through a resolver that maps every name to 127.0.0.1, so a remote
name (`models.example.com`) and a local one (`gpu-box.lan`) are both served by it."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from app.llm import Gateway
from app.llm.providers import PROVIDERS, PURPOSE_HEADER
from app.llm.types import Call
from tests.fakemodel import UNNAMED

HI = [{"role": "user", "content": "Hallo Nova"}]
HOSTS = {"127.0.0.1": True, "gpu-box.lan": True, "models.example.com": False}


class EveryNameIsTheFake(AbstractResolver):
    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        return [{"hostname": host, "host": "127.0.0.1", "port": port, "family": socket.AF_INET,
                 "proto": 0, "flags": 0}]

    async def close(self) -> None:
        pass


@pytest.mark.parametrize("dialect", ["openai", "ollama"])
@pytest.mark.parametrize("host", list(HOSTS))
@pytest.mark.parametrize("marked_remote", [False, True], ids=["unmarked", "llm_remote"])
@pytest.mark.parametrize("asked", [False, True], ids=["setting_off", "setting_on"])
async def test_only_a_local_provider_is_told_the_purpose_and_only_when_asked(
        fake_model, make_settings, dialect, host, marked_remote, asked):
    settings = make_settings(llm_test_purpose_header=asked)
    url = f"http://{host}:{urlsplit(fake_model.url).port}"
    async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(resolver=EveryNameIsTheFake())) as session:
        provider = PROVIDERS[dialect](settings=settings, session=session, url=url,
                                      model="fake", api_key=None, remote=marked_remote)
        await provider.complete(Call("responder", HI, 8, 0.5))
        async for _ in provider.stream(Call("responder", HI, 8, 0.5)):
            pass
    remote = marked_remote or not HOSTS[host]
    assert provider.remote is remote
    told = asked and not remote
    assert [r.purpose for r in fake_model.chats()] == \
        ["responder" if told else None] * 2
    assert all((PURPOSE_HEADER in r.headers) is told for r in fake_model.requests)


async def test_the_gateway_never_tells_a_remote_provider_even_with_the_setting_on(
        fake_model, make_settings):
    settings = make_settings(**fake_model.overrides(llm_remote=True))
    assert settings.llm_test_purpose_header is True
    async with Gateway(settings) as gateway:
        await gateway.complete("responder", HI, max_tokens=8, user_id="local")
        async for _ in gateway.stream("responder", HI, max_tokens=8, user_id="local"):
            pass
    assert len(fake_model.chats(UNNAMED)) == 2 and fake_model.chats("responder") == []


async def test_a_switch_to_remote_stops_the_header_at_once(fake_model, make_settings):
    async with Gateway(make_settings(**fake_model.overrides())) as gateway:
        await gateway.complete("responder", HI, max_tokens=8, user_id="local")
        await gateway.switch(llm_remote=True)
        assert gateway.remote
        await gateway.complete("responder", HI, max_tokens=8, user_id="local")
    assert [r.purpose for r in fake_model.chats()] == ["responder", None]


async def test_without_the_setting_a_local_gateway_does_not_tell_either(fake_model,
                                                                        make_settings):
    settings = make_settings(**fake_model.overrides(llm_test_purpose_header=False))
    async with Gateway(settings) as gateway:
        assert not gateway.remote
        await gateway.complete("responder", HI, max_tokens=8)
    [request] = fake_model.chats()
    assert request.purpose is None and PURPOSE_HEADER not in request.headers


def test_the_setting_is_off_unless_asked(make_settings):
    assert make_settings().llm_test_purpose_header is False
