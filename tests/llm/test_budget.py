"""The prompt budget at its edges (design §7, seed 004 §16.2), and that a request that does not
fit never reaches the network."""

from __future__ import annotations

import pytest

from app.llm import Gateway, ModelError
from app.llm.budget import estimate_tokens, margin_tokens, plan


def msgs(*contents: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": c} for c in contents]


def test_estimate_is_two_chars_per_token_rounded_up_over_all_messages():
    assert estimate_tokens(msgs(""), 2.0) == 0
    assert estimate_tokens(msgs("a"), 2.0) == 1
    assert estimate_tokens(msgs("ab"), 2.0) == 1
    assert estimate_tokens(msgs("abc"), 2.0) == 2
    assert estimate_tokens(msgs("abc", "de"), 2.0) == 3  # 5 chars together
    assert estimate_tokens(msgs("ä" * 7), 3.5) == 2  # characters, not bytes


def test_margin_is_exact_not_float_rounding():
    assert margin_tokens(8192, 0.15) == 1229  # 1228.8 rounds up
    assert margin_tokens(1000, 0.15) == 150  # exactly 150, not 150.00000000000003 -> 151
    assert margin_tokens(100, 0.0) == 0


@pytest.mark.parametrize("window", [1000, 8192, 32768])
def test_a_request_that_fills_the_usable_window_exactly_fits_one_more_token_does_not(window):
    usable = window - margin_tokens(window, 0.15)
    max_tokens = 100
    chars = (usable - max_tokens) * 2
    budget = plan(msgs("x" * chars), window=window, max_tokens=max_tokens,
                  chars_per_token=2.0, margin=0.15)
    assert budget.fits and budget.needed == budget.usable == usable
    with pytest.raises(ModelError) as caught:
        plan(msgs("x" * (chars + 1)), window=window, max_tokens=max_tokens,
             chars_per_token=2.0, margin=0.15)
    assert caught.value.code == "prompt_budget_exceeded"
    assert "nothing was cut" in caught.value.message
    with pytest.raises(ModelError):  # the output reservation counts the same way
        plan(msgs("x" * chars), window=window, max_tokens=max_tokens + 1,
             chars_per_token=2.0, margin=0.15)


def test_an_output_reservation_beyond_the_usable_window_is_its_own_error():
    with pytest.raises(ModelError) as caught:
        plan(msgs("hi"), window=1000, max_tokens=851, chars_per_token=2.0, margin=0.15)
    assert caught.value.code == "output_limit_unsupported"
    assert plan(msgs(""), window=1000, max_tokens=850, chars_per_token=2.0, margin=0.15).fits


async def test_over_budget_fails_before_any_network_call(fake_model, make_settings):
    settings = make_settings(**fake_model.overrides(llm_context=1000))
    fake_model.context_length = None  # the window comes from llm_context
    async with Gateway(settings) as gateway:
        usable = 1000 - 150
        with pytest.raises(ModelError) as caught:
            await gateway.complete("responder", msgs("x" * ((usable - 10) * 2 + 1)),
                                   max_tokens=10)
        assert caught.value.code == "prompt_budget_exceeded"
        assert fake_model.chats() == []  # metadata may be asked; the model never was
        result = await gateway.complete("responder", msgs("x" * ((usable - 10) * 2)),
                                        max_tokens=10)
        assert result.text == "ok"
        assert len(fake_model.chats()) == 1
        sent = fake_model.chats()[0].messages[0]["content"]
        assert len(sent) == (usable - 10) * 2  # sent whole: nothing was cut
        trace = gateway.traces.list()
        assert trace[0].outcome == "ok" and trace[0].budget["fits"] is True
        assert trace[1].error_code == "prompt_budget_exceeded"


async def test_the_budget_uses_the_settings_for_estimate_and_margin(fake_model, make_settings):
    fake_model.context_length = 1000
    settings = make_settings(**fake_model.overrides(chars_per_token=4.0,
                                                    budget_safety_margin=0.5))
    async with Gateway(settings) as gateway:
        await gateway.complete("responder", msgs("x" * ((500 - 100) * 4)), max_tokens=100)
        with pytest.raises(ModelError) as caught:
            await gateway.complete("responder", msgs("x" * ((500 - 100) * 4 + 1)),
                                   max_tokens=100)
        assert caught.value.code == "prompt_budget_exceeded"
        budget = gateway.traces.list()[1].budget
        assert budget == {"window": 1000, "margin_tokens": 500, "reserved_output": 100,
                          "estimated_input": 400, "counted_input": None, "usable": 500,
                          "fits": True}
