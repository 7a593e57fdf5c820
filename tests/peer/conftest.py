"""The real peer: llama-cpp-python's OpenAI-compatible server with a tiny random-weight model.

Started once per session on a free port by `server.running` (`make test-peer` installs
`llama-cpp-python[server]`, `gguf` and `numpy` first). Measured facts about this peer, each
held by a test in `test_peer_llama.py`: `--n_ctx` must be a multiple of 256; a too-long prompt
answers 400 `context_length_exceeded` when not streaming but 200 with an empty event stream
when streaming; stream deltas may have empty content and carry no usage; `response_format`
must be `{"type": "json_object", "schema": …}` (`json_schema` answers 500).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.peer.server import Peer, running

N_CTX = 1024  # a multiple of 256; its 15 % margin covers the chat template (~80 tokens)


@pytest.fixture(scope="session")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    with running(tmp_path_factory.mktemp("peer"), N_CTX) as peer:
        yield peer
