"""`Database.read_stream` releases what it took, however the stream ends: its generator runs
on a reader thread over a read-only connection of its own, and that connection is closed when
the generator is exhausted, raises half-way (the exception reaches the reader), fails before
its first item, or when the reading task is cancelled while a step runs on the thread — the
generator is closed after that step, never while it runs. Afterwards the store serves reads
and streams as before. On both engines (`--engine=postgresql` runs them on PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.storage.database import Database


class Broken(Exception):
    pass


@pytest.fixture
async def db(make_database: Any, tmp_path: Path) -> AsyncIterator[Database]:
    store = make_database(tmp_path / "novaberg.sqlite3")
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def is_closed(conn: Any) -> bool:
    """A closed connection (of either engine) cannot run a query any more."""
    try:
        conn.execute("SELECT 1").fetchall()
    except Exception:  # noqa: BLE001 - sqlite3 and psycopg raise their own kinds
        return True
    return False


class Producer:
    """A generator over the stream's connection that notes the connection and whether its
    own `finally` ran; `fail_at`: the item it raises at instead of yielding."""

    def __init__(self, items: int = 3, fail_at: int | None = None) -> None:
        self.items, self.fail_at = items, fail_at
        self.conn: Any = None
        self.finished = threading.Event()

    def __call__(self, conn: Any) -> Iterator[int]:
        self.conn = conn
        try:
            for n in range(self.items):
                if n == self.fail_at:
                    raise Broken(f"item {n}")
                yield conn.execute("SELECT ?", (n,)).fetchone()[0]
        finally:
            self.finished.set()


async def read_all(db: Database, produce: Any) -> list[Any]:
    async with contextlib.aclosing(db.read_stream(produce)) as items:
        return [item async for item in items]


async def still_serves(db: Database) -> None:
    assert await db.execute_fn(lambda conn: conn.execute("SELECT 7").fetchone()[0]) == 7
    assert await read_all(db, Producer(2)) == [0, 1]


async def test_a_whole_stream_closes_its_connection(db):
    produce = Producer(3)
    assert await read_all(db, produce) == [0, 1, 2]
    assert produce.finished.is_set() and is_closed(produce.conn)


@pytest.mark.parametrize("fail_at", [0, 2])
async def test_a_generator_that_raises_reaches_the_reader_and_closes_its_connection(db,
                                                                                   fail_at):
    produce = Producer(5, fail_at=fail_at)
    got: list[Any] = []
    with pytest.raises(Broken, match=f"item {fail_at}"):
        async with contextlib.aclosing(db.read_stream(produce)) as items:
            async for item in items:
                got.append(item)
    assert got == list(range(fail_at))
    assert produce.finished.is_set() and is_closed(produce.conn)
    await still_serves(db)


async def test_a_producer_that_fails_before_its_generator_closes_the_connection(db):
    seen: list[Any] = []

    def produce(conn: Any) -> Iterator[int]:
        seen.append(conn)
        raise Broken("no generator")

    with pytest.raises(Broken):
        await read_all(db, produce)
    assert is_closed(seen[0])
    await still_serves(db)


async def test_a_reader_cancelled_mid_step_closes_the_generator_after_that_step(db):
    inside, go_on = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    produce_conn: list[Any] = []

    def produce(conn: Any) -> Iterator[int]:
        produce_conn.append(conn)
        yield 0
        inside.set()
        go_on.wait(30)  # the second step is still running on the reader thread...
        try:
            yield conn.execute("SELECT 1").fetchone()[0]  # ...and uses its connection
        except BaseException as exc:
            errors.append(exc)
            raise

    async def read() -> None:
        async with contextlib.aclosing(db.read_stream(produce)) as items:
            async for _ in items:
                pass

    reading = asyncio.create_task(read())
    assert await asyncio.to_thread(inside.wait, 30)
    reading.cancel()
    # The cancelled reader ends once its step has: the generator is not closed (nor its
    # connection) while it runs on the reader thread.
    done, _ = await asyncio.wait([reading], timeout=0.3)
    assert not done and not is_closed(produce_conn[0])
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(reading, 30)
    assert is_closed(produce_conn[0])
    # The step finished on an open connection; the close came after it (GeneratorExit at
    # its yield), not "generator already executing".
    assert [type(e) for e in errors] == [GeneratorExit]
    await still_serves(db)
