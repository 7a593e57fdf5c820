"""The app's Redis pool (app.storage.redis_driver.connection_pool): commands go out in the
caller's own step, with no task per command, and a Redis that does not answer still fails a
command after the socket timeout, closing its connection."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as aioredis
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.storage.redis_driver import PROTOCOL, async_client, client, connection_pool


class TaskCount:
    """Tasks started on the running loop while active."""

    def __init__(self) -> None:
        self.started = 0

    def __enter__(self) -> TaskCount:
        self.loop = asyncio.get_running_loop()
        self._factory = self.loop.get_task_factory()

        def count(loop: asyncio.AbstractEventLoop, coro, **kwargs):  # noqa: ANN001, ANN202
            self.started += 1
            return asyncio.Task(coro, loop=loop, **kwargs)

        self.loop.set_task_factory(count)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.set_task_factory(self._factory)


async def test_commands_start_no_task_and_answer_as_before(session_redis) -> None:  # noqa: ANN001
    client = aioredis.Redis.from_pool(connection_pool(
        session_redis.url("pool"), max_connections=4, wait_seconds=1))
    try:
        await client.ping()  # connected
        with TaskCount() as tasks:
            for i in range(20):
                await client.set(f"k{i}", i)
            values = [await client.get(f"k{i}") for i in range(20)]
        assert values == [str(i) for i in range(20)]
        assert tasks.started == 0
    finally:
        await client.aclose()


async def test_the_library_default_would_start_a_task_per_command(session_redis) -> None:  # noqa: ANN001
    """What the pool's connection class changes (and what the test above would see without)."""
    client = aioredis.Redis.from_url(session_redis.url("pool"), decode_responses=True)
    try:
        await client.ping()
        with TaskCount() as tasks:
            for i in range(20):
                await client.set(f"k{i}", i)
        assert tasks.started >= 20
    finally:
        await client.aclose()


@pytest.fixture
async def stalling_server():  # noqa: ANN201
    """A TCP server that speaks just enough RESP2: +OK to every command (the connection's
    handshake), and no answer at all to PING — a Redis that hangs. It yields its port and the
    names of the commands it was sent."""
    received: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while header := await reader.readline():  # *N
                args = []
                for _ in range(int(header[1:])):
                    length = int((await reader.readline())[1:])  # $len
                    args.append((await reader.readexactly(length + 2))[:-2])
                received.append(args[0].upper())
                if args[0].upper() != b"PING":
                    writer.write(b"+OK\r\n")
        except (asyncio.CancelledError, asyncio.IncompleteReadError):
            pass  # the server closing at the test's end, or the client gone
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], received
    finally:
        server.close()
        await server.wait_closed()


async def test_a_redis_that_stops_answering_fails_the_command_and_drops_the_connection(
        stalling_server) -> None:  # noqa: ANN001
    port, _ = stalling_server
    client = aioredis.Redis.from_pool(connection_pool(
        f"redis://127.0.0.1:{port}/0?socket_timeout=0.3", max_connections=2,
        wait_seconds=1))
    try:
        assert await client.set("k", "v")  # the handshake and a command answered
        started = time.monotonic()
        with pytest.raises(RedisTimeoutError):
            await client.ping()
        assert 0.25 <= time.monotonic() - started < 3
        assert await client.set("k", "v")  # a fresh connection works again
    finally:
        await client.aclose()


async def test_the_pool_speaks_resp2_without_a_hello(stalling_server) -> None:  # noqa: ANN001
    """The protocol is the app's choice (PROTOCOL), not the library's default: redis-py 8.2
    began each connection with HELLO 3, which a RESP2-only server cannot answer."""
    port, received = stalling_server
    client = aioredis.Redis.from_pool(connection_pool(
        f"redis://127.0.0.1:{port}/0", max_connections=1, wait_seconds=1))
    try:
        assert await client.set("k", "v")
        assert b"SET" in received
        assert b"HELLO" not in received
    finally:
        await client.aclose()


async def test_every_client_of_the_app_is_a_resp2_connection(session_redis) -> None:  # noqa: ANN001
    """What the server itself reports of each kind of client the app makes: the pool's, the
    command line's blocking one and its asyncio one."""
    url = session_redis.url("pool")
    pool_client = aioredis.Redis.from_pool(connection_pool(url, max_connections=1,
                                                           wait_seconds=1))
    async_one = async_client(url, decode_responses=True)
    blocking = client(url, decode_responses=True)
    try:
        # HELLO without a version answers with the connection's own, changing nothing.
        infos = [await pool_client.execute_command("HELLO"),
                 await async_one.execute_command("HELLO"),
                 blocking.execute_command("HELLO")]
    finally:
        await pool_client.aclose()
        await async_one.aclose()
        blocking.close()
    assert PROTOCOL == 2
    for info in infos:  # a flat list of names and values in RESP2, a map in RESP3
        fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2]))
        assert fields["proto"] == PROTOCOL, info
