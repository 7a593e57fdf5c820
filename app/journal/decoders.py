"""The worker processes that decode photos for the server.

Pillow lets go of the GIL inside its codecs but holds it between their steps; three 40 MP
photos decoded in threads held the event loop up to 150 ms on a two-core machine, in two
processes under 25 ms (bench/uploads.py). So the server decodes in a small process pool,
started on the first photo (spawned: a fresh interpreter, never a fork of a threaded server)
and shared by the process; its size is the decode budget's count of full-size photos
(`media.DECODE_WORKERS`), each at a lower CPU priority than the server. A frozen one-file binary decodes in threads instead: its
interpreter cannot be spawned as a bare Python. A worker that dies (killed for memory) breaks
the pool: that photo is refused, and the next one starts a fresh pool.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

T = TypeVar("T")
TASKS_PER_WORKER = 200  # a worker is replaced after this many photos: its memory returned
WORKER_NICENESS = 10  # below the server's processes when the CPUs are busy

_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()


class DecoderStopped(RuntimeError):
    """A decoding process died under a photo."""


def _executor(workers: int) -> ProcessPoolExecutor | None:
    global _pool
    if getattr(sys, "frozen", False):
        return None
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context("spawn"),
                max_tasks_per_child=TASKS_PER_WORKER,
                initializer=_behind_the_server,
            )
        return _pool


def _behind_the_server() -> None:
    """A decoding process yields a busy CPU to the server's loop (a photo takes a little
    longer; every other request answers first)."""
    os.nice(WORKER_NICENESS)


def _forget(broken: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is broken:
            _pool = None
    broken.shutdown(wait=False, cancel_futures=True)


async def in_worker(workers: int, fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` in a decoding process (a thread in a frozen binary); `DecoderStopped`
    when the process died under it."""
    executor = _executor(workers)
    if executor is None:
        return await asyncio.to_thread(fn, *args)
    try:
        return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)
    except BrokenProcessPool:
        _forget(executor)
        raise DecoderStopped("a photo decoding process stopped") from None
