"""The budget counts with the server's own tokenizer where the estimate refuses a prompt
(issue 36 item 6), on the real fake server's `/tokenize`: llama.cpp's and vLLM's shape, a
server without one, one that is down — which never fails a call the estimate would send."""

from __future__ import annotations

import logging

import msgspec
import pytest

from app.llm import Gateway, ModelError
from app.llm.budget import template_tokens
from app.llm.providers import PROVIDERS
from app.llm.tokenizer import Tokenizers
from tests.fakemodel import Fault

# The fake's window is 1000 tokens; 15 % margin: 850 usable; the estimate makes 2 characters
# a token, the fake's tokenizer 4. With 10 tokens reserved for the answer:
WINDOW = 1000
ESTIMATE_LIMIT = (850 - 10) * 2  # the most characters the estimate admits: 1680
NEAR = "x" * 1800  # the estimate refuses it (900 + 10 > 850); counted: 450 + template
TOO_LONG = "x" * 3960  # counted 990 + template + 10 > 1000: refused by the count too


def msgs(*contents: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": c} for c in contents]


def tokenize_requests(fake_model) -> list:
    return [r for r in fake_model.requests if r.path == "/tokenize"]


@pytest.fixture
async def gateway(fake_model, make_settings):
    fake_model.context_length = WINDOW
    async with Gateway(make_settings(**fake_model.overrides(llm_context=None))) as gateway:
        yield gateway


@pytest.mark.parametrize("tokenizer", ["llama.cpp", "vllm"])
async def test_a_prompt_the_estimate_refuses_is_sent_when_the_servers_count_fits(
        gateway, fake_model, tokenizer):
    fake_model.tokenizer = tokenizer
    result = await gateway.complete("responder", msgs(NEAR), max_tokens=10)

    assert result.text == "ok"
    [asked] = tokenize_requests(fake_model)
    assert asked.body["content"] == asked.body["prompt"] == NEAR  # one body, both shapes
    [chat] = fake_model.chats()
    assert chat.messages[0]["content"] == NEAR  # sent whole
    budget = gateway.traces.list()[0].budget
    assert budget["estimated_input"] == 900 and budget["usable"] == 850
    assert budget["counted_input"] == 450 + template_tokens(1) and budget["fits"] is True


async def test_a_prompt_the_estimate_admits_asks_no_tokenizer(gateway, fake_model):
    fake_model.tokenizer = "llama.cpp"
    for _ in range(3):
        await gateway.complete("responder", msgs("x" * ESTIMATE_LIMIT), max_tokens=10)

    assert tokenize_requests(fake_model) == []  # the common case costs nothing
    assert gateway.traces.list()[0].budget["counted_input"] is None


async def test_a_prompt_the_count_refuses_too_is_refused_before_the_call(gateway, fake_model):
    fake_model.tokenizer = "llama.cpp"
    with pytest.raises(ModelError) as caught:
        await gateway.complete("responder", msgs(TOO_LONG), max_tokens=10)

    assert caught.value.code == "prompt_budget_exceeded"
    assert "tokenizer" in caught.value.message and "nothing was cut" in caught.value.message
    assert len(tokenize_requests(fake_model)) == 1
    assert fake_model.chats() == []


async def test_a_server_without_a_tokenizer_is_asked_once_and_the_estimate_decides(
        gateway, fake_model):
    fake_model.tokenizer = None  # /tokenize answers 404
    for _ in range(2):
        with pytest.raises(ModelError) as caught:
            await gateway.complete("responder", msgs(NEAR), max_tokens=10)
        assert caught.value.code == "prompt_budget_exceeded"
        assert "estimated input 900" in caught.value.message

    assert len(tokenize_requests(fake_model)) == 1  # "offers none" is kept
    assert fake_model.chats() == []


@pytest.mark.parametrize("fault", [Fault.status(503), Fault.drop(), Fault.garbage()],
                         ids=["503", "dropped", "garbage"])
async def test_a_tokenizer_that_is_down_leaves_the_estimate_to_decide_with_a_warning(
        gateway, fake_model, caplog, fault):
    caplog.set_level(logging.WARNING, logger="app.llm.tokenizer")
    fake_model.tokenizer = "llama.cpp"
    fake_model.tokenize_fault = fault

    with pytest.raises(ModelError) as caught:
        await gateway.complete("responder", msgs(NEAR), max_tokens=10)
    assert caught.value.code == "prompt_budget_exceeded"  # the estimate's verdict, not the fault's
    assert "estimated input 900" in caught.value.message
    warned = [r for r in caplog.records if r.name == "app.llm.tokenizer"]
    assert [r.getMessage() for r in warned] == [
        "tokenizer unavailable; the budget falls back to the estimate"]
    # What the estimate admits goes out while the tokenizer is down, and never asks it.
    result = await gateway.complete("responder", msgs("x" * ESTIMATE_LIMIT), max_tokens=10)
    assert result.text == "ok" and len(tokenize_requests(fake_model)) == 1

    fake_model.tokenize_fault = None  # back: a down tokenizer was not taken for a missing one
    assert (await gateway.complete("responder", msgs(NEAR), max_tokens=10)).text == "ok"
    assert len(tokenize_requests(fake_model)) == 2


class Mood(msgspec.Struct):
    emotion: str


async def test_the_repair_retry_of_a_counted_call_is_judged_by_the_count(gateway, fake_model):
    fake_model.tokenizer = "llama.cpp"
    fake_model.script("perception", "not json", {"emotion": "freude"})
    result = await gateway.complete("perception", msgs(NEAR), schema=Mood, max_tokens=10)

    assert result.value == Mood(emotion="freude")
    assert [len(r.messages) for r in fake_model.chats()] == [1, 3]  # the repair went out
    assert len(tokenize_requests(fake_model)) == 1  # what the repair adds is estimated


@pytest.mark.parametrize("remote", [True, False], ids=["remote", "local"])
async def test_a_remote_server_is_never_sent_the_prompt_to_count(fake_model, make_settings,
                                                                 remote):
    fake_model.tokenizer = "llama.cpp"
    gateway = Gateway(make_settings(**fake_model.overrides()))
    await gateway.start()
    try:
        provider = PROVIDERS["openai"](settings=gateway.settings, session=gateway.session,
                                       url=fake_model.url, model="fake", api_key=None,
                                       remote=remote)
        counted = await Tokenizers(gateway.settings).count(provider, msgs("x" * 40))
    finally:
        await gateway.aclose()
    assert counted == (None if remote else 10 + template_tokens(1))
    assert len(tokenize_requests(fake_model)) == (0 if remote else 1)
