"""The gateway against the real fake model server, in both dialects: answers, structured
output and its repair retry, every fault and retry path, cancellation, concurrency,
metadata (cache, stale cache, fallbacks), and the trace."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Literal

import msgspec
import pytest

from app.llm import Gateway, ModelError
from app.llm.providers.openai import OpenAIProvider
from app.llm.schema import json_schema
from app.llm.types import Call
from tests.fakemodel import Fault, Reply

HI = [{"role": "user", "content": "Hallo Nova"}]


class Mood(msgspec.Struct, forbid_unknown_fields=True):
    emotion: Literal["freude", "neutral", "trauer"]
    arousal: float


@pytest.fixture(params=["openai", "ollama"])
def dialect(request) -> str:
    return request.param


@pytest.fixture
async def gateway(fake_model, make_settings, dialect):
    async with Gateway(make_settings(**fake_model.overrides(dialect))) as gateway:
        yield gateway


async def test_text_answer_carries_usage_model_and_purpose(gateway, fake_model, dialect):
    fake_model.script("responder", Reply("Hallo zurück!", usage=(12, 5)))
    result = await gateway.complete("responder", HI, max_tokens=64, temperature=0.2)
    assert result.text == "Hallo zurück!" and result.value is None
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (12, 5)
    assert not result.usage.estimated
    assert (result.model, result.provider, result.purpose) == ("fake", dialect, "responder")
    [request] = fake_model.chats()
    assert request.purpose == "responder" and request.dialect == dialect
    assert request.messages == HI and request.stream is False and request.schema is None
    if dialect == "ollama":
        options = request.body["options"]
        assert options == {"temperature": 0.2, "num_predict": 64, "num_ctx": 8192}
    else:
        assert request.body["max_tokens"] == 64 and request.body["temperature"] == 0.2
        assert "response_format" not in request.body
        assert "provider" not in request.body and "plugins" not in request.body


async def test_structured_output_sends_the_schema_and_returns_a_validated_value(
        gateway, fake_model):
    fake_model.script("perception", {"emotion": "freude", "arousal": 0.7})
    result = await gateway.complete("perception", HI, schema=Mood, max_tokens=64)
    assert result.value == Mood("freude", 0.7)
    assert msgspec.json.decode(result.text) == {"emotion": "freude", "arousal": 0.7}
    assert fake_model.chats()[0].schema == json_schema(Mood)


async def test_a_server_that_refuses_json_schema_is_asked_with_json_object(
        fake_model, make_settings):
    fake_model.refuse_json_schema = True
    fake_model.always("perception", {"emotion": "neutral", "arousal": 0.5})
    async with Gateway(make_settings(**fake_model.overrides())) as gateway:
        for _ in range(2):
            result = await gateway.complete("perception", HI, schema=Mood, max_tokens=64)
            assert result.value == Mood("neutral", 0.5)
    refused, asked, again = fake_model.chats()
    assert refused.answered == "fault:json_schema_refused"
    assert asked.body["response_format"] == {"type": "json_object", "schema": json_schema(Mood)}
    assert again.body["response_format"]["type"] == "json_object"  # remembered


async def test_invalid_output_gets_exactly_one_repair_retry_that_shows_the_error(
        gateway, fake_model):
    fake_model.script("perception", {"emotion": "wut", "arousal": 0.9},
                      {"emotion": "trauer", "arousal": 0.3})
    result = await gateway.complete("perception", HI, schema=Mood, max_tokens=64)
    assert result.value == Mood("trauer", 0.3)
    first, second = fake_model.chats()
    assert second.messages[:-2] == first.messages
    shown = second.messages[-2:]
    assert shown[0] == {"role": "assistant", "content": '{"emotion":"wut","arousal":0.9}'}
    assert shown[1]["role"] == "user"
    assert "Invalid enum value 'wut' - at `$.emotion`" in shown[1]["content"]
    assert second.schema == json_schema(Mood)
    assert gateway.traces.list()[0].repaired is True


class Note(msgspec.Struct):
    text: str


async def test_a_structured_answer_holding_nul_gets_the_repair_retry(gateway, fake_model):
    """U+0000 in a structured answer (no store keeps it on every engine) is an invalid answer:
    the repair names it, and the value comes from the repaired answer."""
    fake_model.script("perception", '{"text": "Hallo\\u0000"}', {"text": "Hallo"})
    result = await gateway.complete("perception", HI, schema=Note, max_tokens=64)
    assert result.value == Note("Hallo")
    _, second = fake_model.chats()
    assert "U+0000" in second.messages[-1]["content"]


async def test_output_still_invalid_after_the_repair_is_model_bad_output(gateway, fake_model):
    fake_model.script("perception", "not json at all", '{"emotion": "freude"}',
                      {"emotion": "freude", "arousal": 0.1})
    with pytest.raises(ModelError) as caught:
        await gateway.complete("perception", HI, schema=Mood, max_tokens=64)
    assert caught.value.code == "model_bad_output"
    assert "arousal" in caught.value.message
    assert len(fake_model.chats()) == 2  # one answer, one repair, no third try


async def test_5xx_is_retried_with_backoff_then_succeeds(gateway, fake_model):
    fake_model.script("responder", Fault.status(500), Fault.status(503), "endlich")
    result = await gateway.complete("responder", HI, max_tokens=16)
    assert result.text == "endlich"
    assert len(fake_model.chats()) == 3
    assert gateway.traces.list()[0].attempts == 3


async def test_5xx_beyond_the_retries_is_model_http_error(gateway, fake_model):
    fake_model.always("responder", Fault.status(502, "bad gateway"))
    with pytest.raises(ModelError) as caught:
        await gateway.complete("responder", HI, max_tokens=16)
    assert caught.value.code == "model_http_error" and caught.value.status == 502
    assert len(fake_model.chats()) == 3  # 1 + model_retries (2)


async def test_429_waits_for_retry_after(gateway, fake_model):
    fake_model.script("responder", Fault.rate_limited(retry_after=0.3), "ok")
    result = await gateway.complete("responder", HI, max_tokens=16)
    assert result.text == "ok"
    first, second = fake_model.chats()
    assert second.at - first.at >= 0.3  # the backoff alone is 0.01 s


async def test_429_whose_retry_after_passes_the_retry_budget_fails_at_once(
        fake_model, make_settings):
    settings = make_settings(**fake_model.overrides(model_retry_max_seconds=2.0))
    fake_model.script("responder", Fault.rate_limited(retry_after=30), "never asked")
    async with Gateway(settings) as gateway:
        with pytest.raises(ModelError) as caught:
            await gateway.complete("responder", HI, max_tokens=16)
    assert caught.value.code == "rate_limited"
    assert len(fake_model.chats()) == 1


async def test_429_beyond_the_retries_is_rate_limited(gateway, fake_model):
    fake_model.always("responder", Fault.rate_limited())
    with pytest.raises(ModelError) as caught:
        await gateway.complete("responder", HI, max_tokens=16)
    assert caught.value.code == "rate_limited" and caught.value.http_status == 429
    assert len(fake_model.chats()) == 3


async def test_a_refused_connection_is_retried_then_model_unavailable(make_settings, dialect):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = make_settings(llm_provider=dialect, llm_url=f"http://127.0.0.1:{port}",
                             llm_model="fake", llm_context=4096, model_backoff_seconds=0.01)
    async with Gateway(settings) as gateway:
        with pytest.raises(ModelError) as caught:
            await gateway.complete("responder", HI, max_tokens=16)
        assert caught.value.code == "model_unavailable"
        assert gateway.traces.list()[0].attempts == 3
        assert gateway.traces.list()[0].window_source == "setting"


async def test_a_hanging_model_fails_at_the_timeout_and_the_server_sees_the_client_go(
        fake_model, make_settings, dialect):
    settings = make_settings(**fake_model.overrides(dialect, model_timeout=0.3))
    fake_model.script("responder", Fault.hang())
    async with Gateway(settings) as gateway:
        with pytest.raises(ModelError) as caught:
            await gateway.complete("responder", HI, max_tokens=16)
    assert caught.value.code == "model_timeout"
    [request] = fake_model.chats()  # a timeout is not retried
    await fake_model.wait_disconnected(request)


async def test_garbage_from_the_server_is_model_bad_response(gateway, fake_model):
    fake_model.script("responder", Fault.garbage(), "not asked")
    with pytest.raises(ModelError) as caught:
        await gateway.complete("responder", HI, max_tokens=16)
    assert caught.value.code == "model_bad_response"
    assert len(fake_model.chats()) == 1


async def test_a_context_length_rejection_maps_to_its_own_code(gateway, fake_model):
    fake_model.script("responder", Fault.context_length(), "not asked")
    with pytest.raises(ModelError) as caught:
        await gateway.complete("responder", HI, max_tokens=16)
    assert caught.value.code == "provider_context_length_rejected"
    assert len(fake_model.chats()) == 1


@pytest.mark.parametrize(("status", "code"), [(401, "model_auth_failed"),
                                              (403, "model_auth_failed"),
                                              (404, "model_not_found"),
                                              (422, "model_http_error")])
async def test_client_errors_are_not_retried(gateway, fake_model, status, code):
    fake_model.script("responder", Fault.status(status, "no"), "not asked")
    with pytest.raises(ModelError) as caught:
        await gateway.complete("responder", HI, max_tokens=16)
    assert caught.value.code == code
    assert len(fake_model.chats()) == 1


async def test_cancelling_the_caller_closes_the_http_request(gateway, fake_model):
    fake_model.script("responder", Fault.hang())
    task = asyncio.create_task(gateway.complete("responder", HI, max_tokens=16))
    [request] = await fake_model.wait_requests(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await fake_model.wait_disconnected(request)
    assert gateway.traces.list()[0].outcome == "cancelled"


@pytest.mark.parametrize("limit", [1, 3])
async def test_parallel_requests_per_provider_are_limited(fake_model, make_settings, limit):
    settings = make_settings(**fake_model.overrides(model_concurrency=limit))
    fake_model.always("responder", Reply("ok", delay=0.1))
    async with Gateway(settings) as gateway:
        results = await asyncio.gather(*(gateway.complete("responder", HI, max_tokens=8)
                                         for _ in range(4)))
    assert [r.text for r in results] == ["ok"] * 4
    assert fake_model.max_in_flight == limit


async def test_the_servers_own_slots_limit_the_parallel_requests(fake_model, make_settings):
    fake_model.total_slots = 3  # llama.cpp's /props; the setting says 1
    fake_model.always("responder", Reply("ok", delay=0.1))
    async with Gateway(make_settings(**fake_model.overrides(model_concurrency=1))) as gateway:
        await asyncio.gather(*(gateway.complete("responder", HI, max_tokens=8)
                               for _ in range(6)))
        assert await gateway.parallel() == 3
        assert gateway.describe().concurrency == 3
    assert fake_model.max_in_flight == 3
    assert len([r for r in fake_model.requests if r.path == "/props"]) == 1  # kept


async def test_slots_fall_back_to_the_setting_while_props_cannot_be_asked(fake_model,
                                                                         make_settings):
    fake_model.total_slots = 4
    fake_model.metadata_fault = Fault.status(503)
    settings = make_settings(**fake_model.overrides(model_concurrency=2, llm_context=8192))
    async with Gateway(settings) as gateway:
        assert await gateway.parallel() == 2  # not kept: asked again next time
        fake_model.metadata_fault = None
        assert await gateway.parallel() == 4


# --- metadata --------------------------------------------------------------------------------

def metadata_requests(fake_model) -> list:
    return [r for r in fake_model.requests if not r.is_chat]


async def test_the_window_comes_from_the_provider_and_is_cached(gateway, fake_model, dialect):
    fake_model.context_length = 6000
    for _ in range(3):
        await gateway.complete("responder", HI, max_tokens=8)
    asked = metadata_requests(fake_model)
    assert len([r for r in asked if r.path in ("/v1/models", "/api/show")]) == 1
    sources = [t.window_source for t in gateway.traces.list()]
    assert sources == ["cache", "cache", "provider"]
    assert gateway.traces.list()[0].budget["window"] == (6000 if dialect == "openai" else 6000)


async def test_a_stale_window_serves_while_the_provider_is_down(fake_model, make_settings,
                                                                 dialect):
    settings = make_settings(**fake_model.overrides(dialect, llm_context=None,
                                                    model_metadata_ttl=0))
    async with Gateway(settings) as gateway:
        await gateway.complete("responder", HI, max_tokens=8)
        fake_model.metadata_fault = Fault.status(503)
        result = await gateway.complete("responder", HI, max_tokens=8)
    assert result.text == "ok"
    latest = gateway.traces.list()[0]
    assert latest.window_source == "stale" and latest.budget["window"] == 8192


async def test_without_cache_a_down_provider_falls_back_to_llm_context_else_unknown(
        fake_model, make_settings, dialect):
    fake_model.metadata_fault = Fault.status(503)
    async with Gateway(make_settings(**fake_model.overrides(dialect, llm_context=None))) as gw:
        with pytest.raises(ModelError) as caught:
            await gw.complete("responder", HI, max_tokens=8)
        assert caught.value.code == "model_metadata_unknown"
        assert fake_model.chats() == []
    async with Gateway(make_settings(**fake_model.overrides(dialect, llm_context=3000))) as gw:
        await gw.complete("responder", HI, max_tokens=8)
        assert gw.traces.list()[0].window_source == "setting"
        assert gw.traces.list()[0].budget["window"] == 3000


async def test_a_provider_that_does_not_state_its_window_uses_llm_context(
        fake_model, make_settings):
    fake_model.context_length = None  # like llama-cpp-python: no window in /v1/models
    async with Gateway(make_settings(**fake_model.overrides(llm_context=None))) as gateway:
        with pytest.raises(ModelError) as caught:
            await gateway.complete("responder", HI, max_tokens=8)
        assert caught.value.code == "model_metadata_unknown"
        assert "llm_context" in caught.value.message
    async with Gateway(make_settings(**fake_model.overrides(llm_context=2048))) as gateway:
        await gateway.complete("responder", HI, max_tokens=8)
        asked = len(metadata_requests(fake_model))
        await gateway.complete("responder", HI, max_tokens=8)
        assert gateway.traces.list()[0].budget["window"] == 2048
        assert len(metadata_requests(fake_model)) == asked  # "does not say" is cached too


@pytest.mark.parametrize(("num_ctx", "llm_context", "trained", "expected"), [
    (4096, None, 32768, 4096),  # the Modelfile's num_ctx
    (None, 12000, 32768, 12000),  # else llm_context
    (None, None, 32768, 8192),  # else llm_ollama_default_context
    (None, None, 4096, 4096),  # never above the trained length
    (None, 65536, 16384, 16384),
])
async def test_ollama_window_and_num_ctx(start_fake_model, make_settings, num_ctx,
                                         llm_context, trained, expected):
    fake = await start_fake_model(context_length=trained, ollama_num_ctx=num_ctx)
    settings = make_settings(**fake.overrides("ollama", llm_context=llm_context))
    async with Gateway(settings) as gateway:
        await gateway.complete("responder", HI, max_tokens=8)
    assert fake.chats()[0].body["options"]["num_ctx"] == expected


async def test_a_purpose_below_its_minimum_window_fails_before_the_call(gateway, fake_model):
    with pytest.raises(ModelError) as caught:
        await gateway.complete("journal_reconstruct", HI, max_tokens=8)
    assert caught.value.code == "model_context_too_small"
    assert "32768" in caught.value.message
    gateway.require_context("planner", 8193)
    with pytest.raises(ModelError):
        await gateway.complete("planner", HI, max_tokens=8)
    gateway.require_context("planner", 8192)
    await gateway.complete("planner", HI, max_tokens=8)
    assert [r.purpose for r in fake_model.chats()] == ["planner"]


# --- provider details ------------------------------------------------------------------------

def test_openrouter_gets_zero_data_retention_and_no_compression(make_settings):
    settings = make_settings()
    provider = OpenAIProvider(settings=settings, session=None,
                              url="https://openrouter.ai/api/v1", model="m", api_key=None)
    assert provider.url == "https://openrouter.ai/api"
    payload = provider._payload(Call("responder", HI, 8, 0.5), stream=False)
    assert payload["provider"] == {"data_collection": "deny"}
    assert payload["plugins"] == [{"id": "context-compression", "enabled": False}]
    assert payload["transforms"] == []


async def test_the_api_key_goes_to_the_configured_server_only_and_is_never_logged(
        fake_model, start_fake_model, make_settings, caplog):
    caplog.set_level(logging.DEBUG)
    secret = "sk-test-secret-4711"
    other = await start_fake_model()
    async with Gateway(make_settings(**fake_model.overrides(llm_api_key=secret))) as gateway:
        await gateway.complete("responder", HI, max_tokens=8)
        tested = await gateway.test_connection("openai", other.url, None)
    assert tested.ok is True and tested.models == ["fake"]
    assert fake_model.chats()[0].headers["Authorization"] == f"Bearer {secret}"
    assert all("Authorization" not in r.headers for r in other.requests)
    assert secret not in caplog.text


async def test_every_call_is_traced_and_logged_without_text(gateway, fake_model, caplog):
    caplog.set_level(logging.INFO, logger="app.llm.gateway")
    fake_model.script("salience", Fault.status(500), "geheime Antwort")
    await gateway.complete("salience", [{"role": "user", "content": "geheimer Prompt"}],
                           max_tokens=8)
    [trace] = gateway.traces.list()
    assert trace.purpose == "salience" and trace.outcome == "ok"
    assert trace.attempts == 2 and trace.model == "fake"
    assert trace.budget["estimated_input"] == 8 and trace.budget["reserved_output"] == 8
    assert trace.prompt_tokens is not None and trace.duration_ms >= 0
    lines = [r for r in caplog.records if r.getMessage() == "model call"]
    assert lines and lines[-1].fields["purpose"] == "salience"
    assert "geheim" not in caplog.text  # text only at debug level


async def test_the_trace_ring_is_bounded(fake_model, make_settings):
    async with Gateway(make_settings(**fake_model.overrides(llm_trace_size=3))) as gateway:
        for purpose in ("a", "b", "c", "d"):
            await gateway.complete(purpose, HI, max_tokens=8)
        assert [t.purpose for t in gateway.traces.list()] == ["d", "c", "b"]


@pytest.mark.parametrize("bad", [
    {"purpose": "", "messages": HI, "max_tokens": 8},
    {"purpose": "x", "messages": [], "max_tokens": 8},
    {"purpose": "x", "messages": [{"role": "tool", "content": "x"}], "max_tokens": 8},
    {"purpose": "x", "messages": [{"role": "user", "content": None}], "max_tokens": 8},
    {"purpose": "x", "messages": HI, "max_tokens": 0},
    {"purpose": "x", "messages": HI, "max_tokens": True},
    {"purpose": "x", "messages": HI, "max_tokens": 8, "temperature": 3.0},
])
async def test_a_call_that_breaks_the_interface_is_a_value_error(gateway, fake_model, bad):
    with pytest.raises(ValueError):
        await gateway.complete(**bad)
    assert fake_model.requests == []
