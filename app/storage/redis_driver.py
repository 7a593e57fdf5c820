"""How Novaberg talks to Redis: the protocol every client speaks (`PROTOCOL`), the app's
connection pool (`connection_pool`: what every connection tells the server about itself,
CLIENT SETINFO, and how it times its commands out), the command line's clients (`client`,
`async_client`), and `ScriptLine`, a script's own connection for a path that must not queue
behind the rest of the process.

RESP2, chosen on purpose rather than left to the library's default (redis-py 8.2 moved that
default to RESP3): the app reads replies in the shapes RESP2 gives (stream entries, scores,
pub/sub messages as lists), every Redis-compatible server speaks it (RESP3 needs Redis 6 and
HELLO, which some proxies and older managed servers lack), and the app uses nothing only
RESP3 has (client-side caching, push messages). With it named, a connection sends no HELLO:
the handshake is the same on every server and every library release.

With the library's version given, a new connection does not look it up: redis-py would
otherwise ask `importlib.metadata`, which scans every installed package — milliseconds of
CPU per connection and a crowd of short-lived objects, whose garbage collection held the
event loop for 10–15 ms during each backup (its worker thread connects anew).

`unprotected_remote` tells a start that its external Redis is reachable from other machines
with no password: whoever reaches it reads and writes every user's state (docs/deploy.md).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.connection import parse_url
from redis.driver_info import DriverInfo
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.core.hosts import is_loopback

DRIVER_INFO = DriverInfo(name="redis-py", lib_version=redis.__version__)
PROTOCOL = 2


def unprotected_remote(url: str) -> bool:
    """True when `url` names a Redis off this machine (not a unix socket, not a loopback
    host) and gives no password, in the URL or its `?password=`, read as redis-py reads it.
    A user name alone is no password; TLS (`rediss://`) without one still lets anyone who
    reaches the port in."""
    options = parse_url(url)
    if "path" in options:  # a unix socket: the file's mode decides who connects
        return False
    if is_loopback(options.get("host", "localhost")):  # redis-py's default host
        return False
    return not options.get("password")


def client(url: str, **options: Any) -> redis.Redis:
    """A blocking client of the Redis at `url` speaking `PROTOCOL` (the command line's and a
    backup thread's way in; `options` as redis-py's)."""
    return redis.Redis.from_url(url, protocol=PROTOCOL, driver_info=DRIVER_INFO, **options)


def async_client(url: str, **options: Any) -> aioredis.Redis:
    """An asyncio client of the Redis at `url` speaking `PROTOCOL`, outside the app's pool."""
    return aioredis.Redis.from_url(url, protocol=PROTOCOL, driver_info=DRIVER_INFO, **options)


def connection_pool(
    url: str, *, max_connections: int, wait_seconds: float
) -> aioredis.BlockingConnectionPool:
    """The app's pool for `url`: blocking (with many pairs at once a command waits up to
    `wait_seconds` for a free connection instead of failing with "Too many connections";
    redis-py's default pool raises at 100), with the driver's info given, and connections
    that send without a task of their own (`timed_by_timer`)."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        decode_responses=True,
        max_connections=max_connections,
        timeout=wait_seconds,
        protocol=PROTOCOL,
        driver_info=DRIVER_INFO,
    )
    pool.connection_class = timed_by_timer(pool.connection_class)  # type: ignore[arg-type]  # a class is hashable: mypy reads the instance __hash__ redis-py declares
    return pool


@functools.cache
def timed_by_timer(
    base: type[aioredis.connection.AbstractConnection],
) -> type[aioredis.connection.AbstractConnection]:
    """`base` (the connection class the URL chose) with the same `socket_timeout` (5 s by
    default) on every write and read, kept by a timer instead of `asyncio.wait_for`.

    On Python 3.11 redis-py's `wait_for` around each write starts a task: the command goes
    out one loop round later (behind that round's background slice) and costs a task's
    creation and four more callbacks — under the 1 000-pair burst a third of the loop's
    callbacks, and the accept's round trip waited one round more (issue 26 item 4). A timer
    (`asyncio.timeout`) bounds the same wait, and the write happens in the caller's step.
    """

    class TimedByTimer(base):  # type: ignore[valid-type,misc]  # a base chosen at run time (the URL's)
        socket_timeout: float | None  # the base's, read before it is set to None below

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # What redis-py would time with wait_for; None there makes its writes direct.
            self.command_timeout: float | None = self.socket_timeout
            self.socket_timeout = None

        async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            try:
                async with asyncio.timeout(self.command_timeout):
                    await super().send_packed_command(command, check_health)
            except TimeoutError:  # as redis-py's own write timeout ends
                await self.disconnect(nowait=True)
                raise RedisTimeoutError("Timeout writing to socket") from None

        async def read_response(
            self, disable_decoding: bool = False, timeout: float | None = None, **kwargs: Any
        ) -> Any:
            if timeout is not None:  # the caller's own (pub/sub): a timeout there returns None
                return await super().read_response(disable_decoding, timeout, **kwargs)
            try:
                async with asyncio.timeout(self.command_timeout):
                    return await super().read_response(disable_decoding, **kwargs)
            except TimeoutError:  # as redis-py's own read timeout ends
                await self.disconnect(nowait=True)
                raise RedisTimeoutError("Timeout reading from socket") from None

    TimedByTimer.__name__ = TimedByTimer.__qualname__ = f"TimedByTimer{base.__name__}"
    return TimedByTimer


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
            for i, reply in zip(
                again, await self._round_trip([calls[i] for i in again]), strict=True
            ):
                replies[i] = reply
        return replies

    async def open(self) -> None:
        """Connect and load the script now (at start-up), so the first calls after a start
        do not each wait behind the connection's handshake and the script's load."""
        await self._round_trip([])

    async def aclose(self) -> None:
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)
        await self._connection.disconnect()
