"""Waiting in tests: on something that can be seen, bounded, never for a fixed time.

    await until(lambda: list_backups(folder))                  # a file appears
    record = await until(lambda: logged(caplog, "…"))          # a log record
    job = await wait_job(client, job_id)                       # a journal job ends
    state = await wait_message(chat.get, message_id)           # a message ends

`until` polls what it is given (a function or a coroutine function) every `every` seconds
until the answer is accepted (truthy, or `accept(answer)`), and returns that answer; a look
that costs the app work (many requests) looks less often. When that does not happen
within `timeout` seconds the test fails, saying what it waited for and what it saw last. The
timeout bounds a broken run; it is never a speed claim (speed is measured in bench/).

A wait for the model to be called is the fake model's own `wait_requests(n, purpose)`, woken
by each request; code outside an event loop polls with `tests.procs.wait_for`. No test sleeps
for a fixed time but where tests/test_house_rules.py names why.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import AUTH

T = TypeVar("T")
WAIT = 20.0  # seconds a test waits for what the app will do (never a speed claim)
POLL_SECONDS = 0.02
JOB_ENDS = ("done", "failed")
MESSAGE_ENDS = ("delivered", "failed")


async def until(look: Callable[[], T | Awaitable[T]], accept: Callable[[T], object] = bool, *,
                timeout: float = WAIT, every: float = POLL_SECONDS, what: str | None = None) -> T:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        seen = look()
        if inspect.isawaitable(seen):
            seen = await seen
        if accept(seen):  # type: ignore[arg-type]
            return seen  # type: ignore[return-value]
        if loop.time() >= deadline:
            raise AssertionError(f"waited {timeout} s for {what or look}; last seen: {seen!r}")
        await asyncio.sleep(every)


def logged(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    """The captured records whose message is `message`."""
    return [record for record in caplog.records if record.getMessage() == message]


async def wait_job(client: TestClient, job_id: str, *, headers: dict[str, str] = AUTH,
                   timeout: float = WAIT) -> dict[str, Any]:
    """A journal job (`/api/journal/jobs/{id}`) once it has ended, done or failed."""
    async def job() -> dict[str, Any]:
        response = await client.get(f"/api/journal/jobs/{job_id}", headers=headers)
        assert response.status == 200, await response.text()
        return await response.json()

    return await until(job, lambda seen: seen["state"] in JOB_ENDS, timeout=timeout,
                       what=f"journal job {job_id} to end")


async def wait_message(get: Callable[[str], Awaitable[dict[str, Any]]], message_id: str,
                       states: tuple[str, ...] = MESSAGE_ENDS, *,
                       timeout: float = WAIT, every: float = POLL_SECONDS) -> dict[str, Any]:
    """A message (`/api/messages/{id}`) once its state is one of `states` (by default: it has
    ended, answered or failed). `get` reads a path of the app as JSON: `Chat.get` in process,
    `tests.kill_support.get` bound to an app process."""
    return await until(lambda: get(f"/api/messages/{message_id}"),
                       lambda seen: seen["state"] in states, timeout=timeout, every=every,
                       what=f"message {message_id} in {states}")
