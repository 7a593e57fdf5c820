"""Character cards read in a process of their own, so that a big card never holds the
server's interpreter (issue 38 item 10: a 12 MB card held the event loop 258 ms, a card
of 2 000 lorebook entries 132 ms, from the import's worker thread — decoding base64, JSON
and zlib and mapping the card hold the GIL in long steps a thread cannot share).

One worker process, started on the first import (`spawn`: a fork of a threaded server
would copy its locks mid-use) and kept for the next, for the life of the server process
(`concurrent.futures` joins it at exit; it ends with its parent's pipe too). What it gives back is the `ImportedCard` the same `cards.read_card` makes in
the server's own process; a `CardError` comes back as itself.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor

from app.characters import cards

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _executor() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn")
            )
        return _pool


async def read_card(raw: bytes, *, character_id: str | None = None) -> cards.ImportedCard:
    """`cards.read_card(raw, character_id=…)`, run in the card process."""
    future = _executor().submit(_read, raw, character_id)
    return await asyncio.wrap_future(future)


def _read(raw: bytes, character_id: str | None) -> cards.ImportedCard:
    return cards.read_card(raw, character_id=character_id)
