"""The gateway against a real llama.cpp server (llama-cpp-python) with a tiny model.

Run with `make test-peer`. Each measured fact of the peer maps to the right outcome: text
and structured answers, every product schema through the server's grammar, a prompt beyond
the window (400 unstreamed, an empty event stream streamed), empty deltas, `length`.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Literal

import msgspec
import pytest

from app.llm import Gateway, ModelError
from app.llm.schema import json_schema
from app.wiring.purposes import model_schemas

pytestmark = pytest.mark.peer

HI = [{"role": "system", "content": "Du bist Nova."},
      {"role": "user", "content": "Hallo, wie geht es dir?"}]


class Tagged(msgspec.Struct, tag=True):
    name: str


class Representative(msgspec.Struct, forbid_unknown_fields=True):
    """Shapes the product's schemas use, in one struct."""

    flag: bool
    count: Annotated[int, msgspec.Meta(ge=0, le=10)]
    ratio: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None
    choice: Literal["lists", "none", "reminders"]
    words: list[str]
    nested: list[Tagged]
    label: str = ""


@pytest.fixture
async def gateway(peer, make_settings):
    # The tiny peer's window is below the journal's real minimum; this suite tests the wire
    # (every schema, the journal's included, as a grammar), not the journal's budget.
    settings = make_settings(llm_provider="openai", llm_url=peer.url, llm_model=None,
                             llm_context=peer.n_ctx, chars_per_token=1.0,
                             journal_min_context=peer.n_ctx,
                             model_backoff_seconds=0.01, model_timeout=60.0)
    async with Gateway(settings) as gateway:
        yield gateway


async def test_a_text_answer_with_real_usage(gateway):
    result = await gateway.complete("responder", HI, max_tokens=32)
    assert isinstance(result.text, str) and result.provider == "openai"
    assert result.model.endswith("tiny.gguf")  # the model name comes from /v1/models
    assert not result.usage.estimated and result.usage.prompt_tokens > 0
    assert result.finish_reason in ("stop", "length")
    trace = gateway.traces.list()[0]
    assert trace.window_source == "setting"  # this server does not state its window


def product_schemas() -> dict[str, type[msgspec.Struct]]:
    return {**model_schemas(), "representative": Representative}


async def test_every_schema_converts_to_a_grammar_and_comes_back_valid(gateway):
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    for purpose, schema in product_schemas().items():
        grammar = json_schema_to_gbnf(json.dumps(json_schema(schema)))  # raises if refused
        assert "root" in grammar, purpose
        result = await gateway.complete(purpose, HI, schema=schema, max_tokens=200)
        assert isinstance(result.value, schema), purpose
        assert not gateway.traces.list()[0].repaired, purpose  # valid at the first answer
    assert gateway.provider.schema_style == "json_object"  # json_schema was refused once


async def test_a_prompt_beyond_the_window_is_rejected_by_the_server(peer, make_settings):
    # An estimate of 8 chars/token lets the prompt past the gateway's own budget, so the
    # server's answer is what is tested: 400 context_length_exceeded.
    settings = make_settings(llm_provider="openai", llm_url=peer.url, llm_context=peer.n_ctx,
                             chars_per_token=8.0)
    long_prompt = [{"role": "user", "content": "a" * (peer.n_ctx + 100)}]
    async with Gateway(settings) as gateway:
        with pytest.raises(ModelError) as caught:
            await gateway.complete("responder", long_prompt, max_tokens=8)
        assert caught.value.code == "provider_context_length_rejected"
        with pytest.raises(ModelError) as caught:  # streamed: 200 and an empty event stream
            async for _ in gateway.stream("responder", long_prompt, max_tokens=8):
                pass
        assert caught.value.code == "provider_context_length_rejected"
        assert [t.attempts for t in gateway.traces.list()] == [1, 1]  # never retried


async def test_the_budget_at_its_edge_is_accepted_by_the_server(gateway, peer):
    # 1 char per token holds for this vocabulary; the 15 % margin covers the chat template.
    max_tokens = 16
    usable = peer.n_ctx - math.ceil(peer.n_ctx * 0.15)
    prompt = [{"role": "user", "content": "b" * (usable - max_tokens)}]
    result = await gateway.complete("responder", prompt, max_tokens=max_tokens)
    assert result.usage.prompt_tokens + max_tokens <= peer.n_ctx
    with pytest.raises(ModelError) as caught:
        await gateway.complete("responder", [{"role": "user", "content": "b" * (usable + 1)}],
                               max_tokens=max_tokens)
    assert caught.value.code == "prompt_budget_exceeded"


async def test_an_output_reservation_beyond_the_window_is_refused_before_the_server(gateway):
    # The server would clamp it silently (finish_reason "length"); the gateway says so first.
    with pytest.raises(ModelError) as caught:
        await gateway.complete("responder", HI, max_tokens=1000)
    assert caught.value.code == "output_limit_unsupported"


async def test_streamed_deltas_skip_empty_content_and_usage_is_estimated(gateway):
    stream = gateway.stream("responder", HI, max_tokens=24)
    deltas = [delta async for delta in stream]
    assert all(deltas)  # the server's role-only and empty deltas never reach the caller
    assert stream.completion.text == "".join(deltas)
    assert stream.completion.usage.estimated  # llama-cpp-python streams carry no usage


async def test_structured_output_cut_by_max_tokens_is_model_bad_output(gateway):
    # Two tokens cannot close the JSON the grammar starts: finish_reason "length", invalid
    # JSON, one repair retry (cut again), then the stable code.
    with pytest.raises(ModelError) as caught:
        await gateway.complete("representative", HI, schema=Representative, max_tokens=2)
    assert caught.value.code == "model_bad_output"
    trace = gateway.traces.list()[0]
    assert trace.repaired is True and trace.attempts == 2
