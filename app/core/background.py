"""Cancelling kept tasks for sure.

On Python 3.11, `asyncio.wait_for` (used inside redis-py for socket writes) loses a
cancellation that arrives just as the inner operation completes (CPython gh-86296): the task
carries on to its next await. So a task is cancelled again until it has really ended.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)

ROUND_SECONDS = 0.5
MAX_ROUNDS = 20


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    pending = {task for task in tasks if not task.done()}
    for _ in range(MAX_ROUNDS):
        if not pending:
            return
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=ROUND_SECONDS)
    log.error("tasks did not end when cancelled", extra={"fields": {
        "tasks": sorted(task.get_name() for task in pending)}})
