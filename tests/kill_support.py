"""Support for the `kill -9` tests: the real entry point as a subprocess against the fake
model server, killed with SIGKILL inside a block and started again on the same data dir.

    async with app_to_kill(data_dir, env) as proc:     # SIGKILL when the block ends
        await call(proc, "POST", "/api/characters/nova/messages", {"text": "…"})
        await fake_model.wait_requests(1, "responder", timeout=WAIT)  # it hangs there
    async with restarted(proc, env) as again:          # same data dir and port; SIGTERM at the end
        ...

The blocking HTTP helpers of `tests.procs` run in a thread: the fake model serves on the
test's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.procs import AppProcess, clean_env, settings_env

WAIT = 30.0  # seconds a kill test waits for the app or the model (never a speed claim)


def fake_model_env(fake_model: Any, **extra: str) -> dict[str, str]:
    """The environment of an app process whose model is the fake model server
    (`FakeModel.overrides()` as NOVABERG_* variables)."""
    return clean_env(**settings_env(fake_model.overrides()), **extra)


async def call(proc: AppProcess, method: str, path: str, body: object = None
               ) -> tuple[int, Any]:
    if method == "GET":
        return await asyncio.to_thread(proc.get, path)
    return await asyncio.to_thread(proc.post, path, body)


async def get(proc: AppProcess, path: str) -> Any:
    """A path of the app process read as JSON (it must answer 200): what
    `tests.waiting.wait_message(partial(get, proc), …)` reads."""
    status, body = await call(proc, "GET", path)
    assert status == 200, (path, status, body)
    return body


@contextlib.asynccontextmanager
async def app_to_kill(data_dir: Path, env: dict[str, str]) -> AsyncIterator[AppProcess]:
    """A started app process that is killed with SIGKILL (no clean-up of any kind) when the
    block ends."""
    proc = AppProcess(data_dir, env=env)
    await asyncio.to_thread(proc.start)
    try:
        yield proc
    finally:
        await asyncio.to_thread(proc.kill)


@contextlib.asynccontextmanager
async def restarted(proc: AppProcess, env: dict[str, str]) -> AsyncIterator[AppProcess]:
    """The app started again on `proc`'s data dir and port; stopped (SIGTERM) at the end."""
    again = AppProcess(proc.data_dir, port=proc.port, env=env)
    await asyncio.to_thread(again.start)
    try:
        yield again
    finally:
        await asyncio.to_thread(again.stop)
