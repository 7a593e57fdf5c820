"""Starting the real peer — llama-cpp-python's OpenAI-compatible server with the tiny model of
`tinymodel.py` — and reading its own account of each request from its log. One place for
both users: the peer suite's session fixture (`conftest.py`) and `bench/reply.py --peer`.

    with running(folder, n_ctx=1024) as peer:   # a free port; stopped (its group) on exit
        ...peer.url, peer.n_ctx, peer.log...

The server runs verbose (its default), and its log says per request how much of the prompt
came from the context it kept (`prefix_hits`). This module imports nothing of the peer's
packages at its top, so the log parser is usable (and tested) without them installed.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.procs import wait_for

START_TIMEOUT = 120.0


@dataclass(frozen=True)
class Peer:
    url: str
    n_ctx: int
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_responds(url: str, process: subprocess.Popen, log: Path) -> None:
    def responds() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    if not wait_for(responds, timeout=START_TIMEOUT, interval=0.2):
        raise RuntimeError(f"llama.cpp server did not answer within {START_TIMEOUT} s")


@contextmanager
def running(folder: Path, n_ctx: int) -> Iterator[Peer]:
    """The peer on a free port of 127.0.0.1, its model written into `folder` and its log at
    `folder/server.log`. `n_ctx` must be a multiple of 256 (the server refuses others)."""
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as exc:  # a missing peer fails its user; it is never skipped
        raise RuntimeError("llama-cpp-python[server] is missing: run `make test-peer`") from exc
    from tests.peer import tinymodel

    model = tinymodel.write(folder / "tiny.gguf")
    port = _free_port()
    log = folder / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
             "--n_ctx", str(n_ctx), "--host", "127.0.0.1", "--port", str(port),
             "--chat_format", "chatml", "--n_threads", "1"],
            stdout=out, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_responds(url, process, log)
        yield Peer(url, n_ctx, log)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# What llama-cpp-python's verbose log says of one request (llama_cpp/llama.py, `generate` and
# `_create_completion`): its one context keeps the previous request's tokens, and a prompt
# that begins with them evaluates only the rest. It does not answer llama.cpp's `timings`.
_PREFIX_HIT = re.compile(
    r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
_ALL_CACHED = "Llama.generate: full prompt already cached"
# Printed once per completion, whatever the cache did; its token figures are not used: llama.cpp
# counts a one-token remainder as generation and reports at least 1 prompt token.
_PERF = "llama_perf_context_print: prompt eval time"


@dataclass(frozen=True)
class PromptAccount:
    """A request's prompt tokens as the server counted them."""

    cached: int  # kept in its context from the request before (not evaluated again)
    processed: int  # evaluated for this request


def prompt_account(excerpt: str, prompt_tokens: int) -> PromptAccount:
    """The server's account of the one request whose log lines are `excerpt` (the log written
    while it ran) and whose answer said `prompt_tokens` (`usage.prompt_tokens`). A prompt
    without a prefix-match line shared nothing with the context (or the context was empty).
    ValueError where the excerpt is not one completion's, or where its figures and
    `prompt_tokens` disagree: no estimate stands in for the server's word."""
    completions = excerpt.count(_PERF)
    if completions != 1:
        raise ValueError(f"{completions} completions in the log excerpt (one expected; is the "
                         "server verbose, and were requests sent one at a time?)")
    hits = _PREFIX_HIT.findall(excerpt)
    if len(hits) > 1:
        raise ValueError(f"{len(hits)} prefix-match lines for one completion")
    if hits:
        cached, remaining = (int(n) for n in hits[0])
        if cached + remaining != prompt_tokens:
            raise ValueError(f"the log says {cached} cached + {remaining} to eval, the answer "
                             f"{prompt_tokens} prompt tokens")
    else:
        cached = prompt_tokens if _ALL_CACHED in excerpt else 0
    return PromptAccount(cached, prompt_tokens - cached)
