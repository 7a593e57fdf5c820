"""`bench/reply.py --peer` reads the peer's own account of each request from its log
(`tests.peer.server.prompt_account`). The log here is a real one: llama-cpp-python 0.3.36's
server (the tiny model, n_ctx 8192) during the bench's first turn and the second turn's
first call, from a 500 (the `json_schema` response format it refuses) on. Requests are cut
where the proxy cuts them: at the line after each answer (the access line)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.peer.server import PromptAccount, prompt_account

LOG = Path(__file__).resolve().parents[1] / "data" / "llama_cpp_server.log"
# usage.prompt_tokens of the answers, in order: perception, responder, thinker, salience,
# salience_character, and the next turn's perception.
PROMPT_TOKENS = [1989, 2498, 1646, 1290, 1634, 2245]


def requests() -> list[str]:
    chunks = re.split(r'(?<=HTTP/1\.1" 200 OK\n)', LOG.read_text())
    return [chunk for chunk in chunks if chunk.strip()]


def test_each_request_of_the_captured_log_is_accounted_for():
    accounts = [prompt_account(chunk, n) for chunk, n in zip(requests(), PROMPT_TOKENS, strict=True)]
    assert accounts == [
        PromptAccount(0, 1989),  # the first completion: the context was empty, no match line
        PromptAccount(694, 1804),  # the system message and the frame's head shared
        PromptAccount(694, 952),
        PromptAccount(694, 596),
        PromptAccount(694, 940),
        PromptAccount(689, 1556),  # the history grew: the next turn shares up to its end
    ]


def test_an_excerpt_that_is_not_one_completion_is_refused():
    chunks = requests()
    with pytest.raises(ValueError, match="2 completions"):
        prompt_account(chunks[1] + chunks[2], 2498)
    with pytest.raises(ValueError, match="0 completions"):
        prompt_account(chunks[0].splitlines()[0], 0)  # the 500's access line alone


def test_figures_that_disagree_with_the_answer_are_refused():
    with pytest.raises(ValueError, match="694 cached \\+ 1804 to eval"):
        prompt_account(requests()[1], 2400)
