"""The real peer: llama-cpp-python's OpenAI-compatible server with a tiny random-weight model.

Started once per session on a free port (`make test-peer` installs
`llama-cpp-python[server]`, `gguf` and `numpy` first). Measured facts about this peer, each
held by a test in `test_peer_llama.py`: `--n_ctx` must be a multiple of 256; a too-long prompt
answers 400 `context_length_exceeded` when not streaming but 200 with an empty event stream
when streaming; stream deltas may have empty content and carry no usage; `response_format`
must be `{"type": "json_object", "schema": …}` (`json_schema` answers 500).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.peer import tinymodel
from tests.procs import wait_for

N_CTX = 1024  # a multiple of 256; its 15 % margin covers the chat template (~80 tokens)
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


@pytest.fixture(scope="session")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as exc:  # a missing peer fails the suite; it is never skipped
        raise RuntimeError("llama-cpp-python[server] is missing: run `make test-peer`") from exc
    folder = tmp_path_factory.mktemp("peer")
    model = tinymodel.write(folder / "tiny.gguf")
    port = _free_port()
    log = folder / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
             "--n_ctx", str(N_CTX), "--host", "127.0.0.1", "--port", str(port),
             "--chat_format", "chatml", "--n_threads", "1"],
            stdout=out, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_responds(url, process, log)
        yield Peer(url, N_CTX, log)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
