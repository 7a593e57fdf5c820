"""How Novaberg talks to Redis beyond a plain client: what every client tells the server about
itself (CLIENT SETINFO), and `ScriptLine`, a script's own connection for a path that must not
queue behind the rest of the process.

With the library's version given, a new connection does not look it up: redis-py would
otherwise ask `importlib.metadata`, which scans every installed package — milliseconds of
CPU per connection and a crowd of short-lived objects, whose garbage collection held the
event loop for 10–15 ms during each backup (its worker thread connects anew).
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.driver_info import DriverInfo
from redis.exceptions import NoScriptError

DRIVER_INFO = DriverInfo(name="redis-py", lib_version=redis.__version__)

# Calls a `ScriptLine` sends in one round trip at most. Its replies wake their callers all in
# the same loop round: 200 accepts that came at once used to finish in one ~50 ms round
# (response, log line, the pair consumer's first step each) while every other task waited —
# the loop lag's maximum with 200 pairs (issue 24 item 18). Sixteen keep a round to a few
# milliseconds; the rest go in the next round trips, the first callers answered sooner.
LINE_BATCH = 16


class ScriptLine:
    """One Lua script run for many concurrent callers over one connection of its own, the
    calls that arrive while a batch is in flight sent together as the next batch (one write
    and one round trip for up to `LINE_BATCH` of them, replies in order; more wait for the
    round trip after, so no loop round wakes more than `LINE_BATCH` callers).

    For a path that must not wait behind the rest of the process (the accept of a message,
    issue 26 item 4): it takes no connection from the shared pool, so a crowd of pair
    consumers waiting there cannot delay it — redis-py's blocking pool is not fair (a woken
    waiter that loses the free connection to a newcomer waits again at the back), and an
    accept queued in it waited up to seconds. At rest a call is one EVALSHA on a connection
    that is already open, sent by the caller itself; only calls that come while one is in
    flight wait for a sender task. The script is loaded once per connection (again after a
    NOSCRIPT).
    A connection error fails the calls of that batch (the caller answers with an error; what
    Redis did is as unknown as for any call cut off) and the next batch connects anew.
    """

    def __init__(self, client: aioredis.Redis, script: str) -> None:
        pool = client.connection_pool
        self._connection = pool.connection_class(**pool.connection_kwargs)
        self._script = script
        self._sha = client.register_script(script).sha
        self._loaded = False
        self._busy = False  # a round trip is in flight
        self._pending: list[tuple[tuple[Any, ...], asyncio.Future[Any]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def __call__(self, keys: list[str], args: list[Any]) -> Any:
        call = (len(keys), *keys, *args)
        if self._busy:  # goes with the next batch
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._pending.append((call, future))
            return await future
        # The line is free: this caller sends its own call (no hop through another task).
        self._busy = True
        try:
            reply = (await self._round_trip([call]))[0]
        finally:
            self._hand_on()
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _hand_on(self) -> None:
        """The round trip ended: send what came meanwhile, or free the line."""
        if self._pending:
            self._sender = asyncio.create_task(self._send(), name="script-line")
        else:
            self._busy = False

    async def _send(self) -> None:
        try:
            while self._pending:
                batch = self._pending[:LINE_BATCH]
                del self._pending[:LINE_BATCH]
                try:
                    replies = await self._round_trip([call for call, _ in batch])
                except (aioredis.RedisError, OSError) as exc:
                    replies = [exc] * len(batch)
                except BaseException:  # cancelled (shutdown): nobody is left waiting
                    for _, future in batch + self._pending:
                        future.cancel()
                    self._pending = []
                    raise
                for (_, future), reply in zip(batch, replies, strict=True):
                    if future.done():  # the caller went away
                        continue
                    if isinstance(reply, BaseException):
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
        finally:
            self._sender = None
            self._busy = False

    async def _round_trip(self, calls: list[tuple[Any, ...]]) -> list[Any]:
        connection = self._connection
        if not connection.is_connected:
            self._loaded = False
        await connection.connect()
        load = not self._loaded
        commands = [("SCRIPT", "LOAD", self._script)] if load else []
        commands += [("EVALSHA", self._sha, *call) for call in calls]
        await connection.send_packed_command(connection.pack_commands(commands))
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(await connection.read_response())
            except aioredis.ResponseError as exc:  # this call's error (NOSCRIPT among them)
                replies.append(exc)
        if load:
            replies.pop(0)
            self._loaded = True
        if any(isinstance(r, NoScriptError) for r in replies):
            self._loaded = False
            again = [i for i, r in enumerate(replies) if isinstance(r, NoScriptError)]
            for i, reply in zip(again, await self._round_trip([calls[i] for i in again]),
                                strict=True):
                replies[i] = reply
        return replies

    async def aclose(self) -> None:
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)
        await self._connection.disconnect()
