"""Streaming through the gateway against the fake model, in both dialects: deltas, usage,
retries before the first delta only, stream faults, early stop and cancellation."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from app.llm import Gateway, ModelError
from tests.fakemodel import Fault, Reply

HI = [{"role": "user", "content": "Erzähl mir was"}]


@pytest.fixture(params=["openai", "ollama"])
def dialect(request) -> str:
    return request.param


@pytest.fixture
async def gateway(fake_model, make_settings, dialect):
    async with Gateway(make_settings(**fake_model.overrides(dialect))) as gateway:
        yield gateway


async def test_deltas_arrive_in_order_and_the_completion_has_usage(gateway, fake_model, dialect):
    fake_model.script("responder", Reply("Es war einmal ein Drache.", usage=(30, 7)))
    stream = gateway.stream("responder", HI, max_tokens=64)
    deltas = [delta async for delta in stream]
    assert deltas == ["Es ", "war ", "einmal ", "ein ", "Drache."]
    completion = stream.completion
    assert completion.text == "Es war einmal ein Drache." and completion.provider == dialect
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (30, 7)
    assert completion.finish_reason == "stop" and completion.model == "fake"
    [request] = fake_model.chats()
    assert request.stream is True and request.purpose == "responder"
    if dialect == "openai":
        assert request.body["stream_options"] == {"include_usage": True}


async def test_empty_deltas_are_skipped(gateway, fake_model):
    fake_model.script("responder", Reply("ab", chunks=["a", "", "b", ""]))
    assert [d async for d in gateway.stream("responder", HI, max_tokens=8)] == ["a", "b"]


async def test_a_nul_in_the_models_deltas_is_dropped(gateway, fake_model):
    """U+0000 means nothing in an answer and PostgreSQL cannot store it: dropped, and a delta
    of only that is no delta at all."""
    fake_model.script("responder", Reply("Hallo Welt", chunks=["Hal\x00lo", "\x00", " Welt"]))
    stream = gateway.stream("responder", HI, max_tokens=8)
    assert [d async for d in stream] == ["Hallo", " Welt"]
    assert stream.completion.text == "Hallo Welt"


async def test_a_stream_without_usage_reports_estimated_tokens(fake_model, make_settings):
    fake_model.stream_usage = False  # like llama-cpp-python, which ignores stream_options
    fake_model.script("responder", "vier")
    async with Gateway(make_settings(**fake_model.overrides())) as gateway:
        stream = gateway.stream("responder", HI, max_tokens=8)
        assert "".join([d async for d in stream]) == "vier"
    assert stream.completion.usage.estimated
    assert stream.completion.usage.completion_tokens == 2  # 4 chars at 2 chars/token


async def test_failures_before_the_first_delta_are_retried(gateway, fake_model):
    fake_model.script("responder", Fault.status(503), Fault.rate_limited(0), "doch noch")
    assert "".join([d async for d in gateway.stream("responder", HI, max_tokens=8)]) == \
        "doch noch"
    assert len(fake_model.chats()) == 3


async def test_a_stream_that_breaks_off_is_not_retried(gateway, fake_model):
    fake_model.script("responder", Reply("eins zwei drei vier fünf", drop_after=2), "never")
    received = []
    with pytest.raises(ModelError) as caught:
        async for delta in gateway.stream("responder", HI, max_tokens=32):
            received.append(delta)
    assert caught.value.code in ("model_unavailable", "model_bad_response")
    assert received and len(fake_model.chats()) == 1
    assert gateway.traces.list()[0].outcome == "error"


async def test_an_empty_event_stream_is_a_context_length_rejection(fake_model, make_settings):
    # llama.cpp answers an over-long streamed prompt with 200 and no event at all.
    fake_model.script("responder", Fault.empty_stream(), "never")
    async with Gateway(make_settings(**fake_model.overrides())) as gateway:
        with pytest.raises(ModelError) as caught:
            async for _ in gateway.stream("responder", HI, max_tokens=8):
                pass
    assert caught.value.code == "provider_context_length_rejected"
    assert len(fake_model.chats()) == 1


async def test_garbage_in_a_stream_is_model_bad_response(gateway, fake_model):
    fake_model.script("responder", Fault.garbage())
    with pytest.raises(ModelError) as caught:
        async for _ in gateway.stream("responder", HI, max_tokens=8):
            pass
    assert caught.value.code == "model_bad_response"


async def test_a_stalled_stream_fails_at_the_timeout(fake_model, make_settings, dialect):
    settings = make_settings(**fake_model.overrides(dialect, model_timeout=0.3))
    fake_model.script("responder", Reply("a b c", chunk_delay=5))
    async with Gateway(settings) as gateway:
        with pytest.raises(ModelError) as caught:
            async for _ in gateway.stream("responder", HI, max_tokens=8):
                pass
    assert caught.value.code == "model_timeout"
    await fake_model.wait_disconnected(fake_model.chats()[0])


async def test_stopping_early_closes_the_http_request(gateway, fake_model):
    fake_model.script("responder", Reply("eins zwei drei vier fünf sechs", chunk_delay=0.2))
    stream = gateway.stream("responder", HI, max_tokens=32)
    async with contextlib.aclosing(stream):
        async for delta in stream:
            assert delta == "eins "
            break
    await fake_model.wait_disconnected(fake_model.chats()[0])
    assert gateway.traces.list()[0].outcome == "cancelled"
    assert stream.completion is None


async def test_cancelling_the_consumer_closes_the_http_request(gateway, fake_model):
    fake_model.script("responder", Reply("eins zwei drei vier", chunk_delay=0.2))
    got_one = asyncio.Event()

    async def consume() -> None:
        async for _ in gateway.stream("responder", HI, max_tokens=32):
            got_one.set()

    task = asyncio.create_task(consume())
    await got_one.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await fake_model.wait_disconnected(fake_model.chats()[0])


async def test_a_stream_over_budget_fails_before_any_network_call(fake_model, make_settings):
    fake_model.context_length = 1000
    async with Gateway(make_settings(**fake_model.overrides())) as gateway:
        with pytest.raises(ModelError) as caught:
            async for _ in gateway.stream("responder",
                                          [{"role": "user", "content": "x" * 1700}],
                                          max_tokens=1):
                pass
    assert caught.value.code == "prompt_budget_exceeded"
    assert fake_model.chats() == []


async def test_the_stream_holds_a_concurrency_slot_until_it_ends(fake_model, make_settings):
    fake_model.always("responder", Reply("a b c d", chunk_delay=0.05))
    async with Gateway(make_settings(**fake_model.overrides(model_concurrency=1))) as gateway:
        async def run() -> str:
            return "".join([d async for d in gateway.stream("responder", HI, max_tokens=8)])

        assert await asyncio.gather(run(), run(), gateway.complete(
            "responder", HI, max_tokens=8)) is not None
    assert fake_model.max_in_flight == 1
