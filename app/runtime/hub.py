"""The delivery hub: every WebSocket of a user gets every message for that user (SPEC §5, §9).

Each connection has its own bounded send queue (`ws_send_queue`) drained by its own writer
task. `publish` encodes a message once and only *offers* it to each queue (no await per
connection), so a slow or dead client never delays the others; a client whose queue is full
is dropped (its transport is aborted) and learns the state of its open turns when it
reconnects.

A new connection starts "held": messages published while its snapshot (the open turns) is
being read wait in a buffer and are queued after the snapshot, so a tab never sees an older
state after a newer one.

With an external Redis (several processes) a message is published on a Redis channel and
every process fans it out to its own connections; with the embedded Redis it goes straight
to the local connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable

import msgspec
import redis.asyncio as aioredis
from aiohttp import web

from app.core.background import cancel_and_wait
from app.core.log import fields
from app.memory import keys
from app.runtime.wire import WS_DECODER, MessageAccepted, TurnState, WsMessage, encode

log = logging.getLogger(__name__)


class _Envelope(msgspec.Struct):
    user_id: str
    data: str
    close_session: str | None = None  # set: close that login session's sockets, send nothing


_ENVELOPE = msgspec.json.Decoder(_Envelope)


def _identity(message: WsMessage) -> tuple[str, str] | None:
    if isinstance(message, MessageAccepted):
        return ("message", message.message_id)
    if isinstance(message, TurnState):
        return ("turn", message.turn_id)
    return None


def _covered(held: list[str]) -> set[tuple[str, str]]:
    covered: set[tuple[str, str]] = set()
    for data in held:
        try:
            identity = _identity(WS_DECODER.decode(data))
        except msgspec.DecodeError:
            continue
        if identity is not None:
            covered.add(identity)
    return covered


class Connection:
    """One open WebSocket and its send queue."""

    def __init__(self, user_id: str, ws: web.WebSocketResponse,
                 transport: asyncio.BaseTransport | None, maxsize: int,
                 session_id: str | None = None) -> None:
        self.user_id = user_id
        self.session_id = session_id  # the login session that opened it (cookie), if any
        self.opened_at = time.monotonic()
        self.ws = ws
        self.transport = transport
        self.queue: asyncio.Queue[str] = asyncio.Queue(maxsize)
        self.held: list[str] | None = []
        self.dropped = False
        self.writer: asyncio.Task[None] | None = None

    def offer(self, data: str) -> bool:
        """Queue `data` without waiting; False when the client is too slow."""
        if self.dropped:
            return True
        if self.held is not None:
            self.held.append(data)
            return len(self.held) <= self.queue.maxsize
        try:
            self.queue.put_nowait(data)
        except asyncio.QueueFull:
            return False
        return True

    def release(self, snapshot: Iterable[WsMessage]) -> bool:
        """Queue the snapshot, then whatever was published meanwhile; start sending.

        A snapshot entry that a live message published meanwhile already covers (the same
        accepted message, a newer state of the same turn) is left out.
        """
        held, self.held = self.held or [], None
        covered = _covered(held)
        fresh = [encode(m).decode() for m in snapshot if _identity(m) not in covered]
        for data in (*fresh, *held):
            if not self.offer(data):
                return False
        return True

    async def run_writer(self) -> None:
        while True:
            data = await self.queue.get()
            await self.ws.send_str(data)


class Hub:
    def __init__(self, send_queue: int, redis: aioredis.Redis | None = None,
                 max_per_user: int | None = None) -> None:
        self.send_queue = send_queue
        self.max_per_user = max_per_user
        self.redis = redis  # set: multi-process mode, fan out through a Redis channel
        self._by_user: dict[str, set[Connection]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    # --- connections ----------------------------------------------------------------------
    def register(self, user_id: str, ws: web.WebSocketResponse,
                 transport: asyncio.BaseTransport | None,
                 session_id: str | None = None) -> Connection:
        conn = Connection(user_id, ws, transport, self.send_queue, session_id)
        conns = self._by_user.setdefault(user_id, set())
        while self.max_per_user is not None and len(conns) >= self.max_per_user:
            oldest = min(conns, key=lambda c: c.opened_at)
            log.warning("websocket closed: too many per user", extra=fields(
                user_id=user_id, limit=self.max_per_user, setting="max_sockets_per_user"))
            conns.discard(oldest)
            self._close_soon(oldest, 1008, b"too many open sockets")
        conns.add(conn)
        conn.writer = asyncio.create_task(self._write(conn), name=f"ws-writer:{user_id}")
        return conn

    async def unregister(self, conn: Connection) -> None:
        conns = self._by_user.get(conn.user_id)
        if conns is not None:
            conns.discard(conn)
            if not conns:
                del self._by_user[conn.user_id]
        if conn.writer is not None:
            await cancel_and_wait([conn.writer])

    def connections(self, user_id: str) -> int:
        return len(self._by_user.get(user_id, ()))

    def start_sending(self, conn: Connection, snapshot: Iterable[WsMessage]) -> None:
        if not conn.release(snapshot):
            self._drop(conn, "send queue full during snapshot")

    async def _write(self, conn: Connection) -> None:
        try:
            await conn.run_writer()
        except (ConnectionResetError, RuntimeError) as exc:
            # The peer went away mid-send; the handler's receive loop ends and unregisters.
            log.info("websocket send failed", extra=fields(user_id=conn.user_id, error=str(exc)))
            self._drop(conn, "send failed")

    def _drop(self, conn: Connection, why: str) -> None:
        if conn.dropped:
            return
        conn.dropped = True
        log.warning("websocket dropped", extra=fields(
            user_id=conn.user_id, why=why, limit=self.send_queue, setting="ws_send_queue"))
        conns = self._by_user.get(conn.user_id)
        if conns is not None:
            conns.discard(conn)
        if conn.writer is not None and conn.writer is not asyncio.current_task():
            conn.writer.cancel()
        # Abort, not close: a close handshake would wait on the very client that is stuck.
        if isinstance(conn.transport, asyncio.Transport):
            conn.transport.abort()

    def _close_soon(self, conn: Connection, code: int, message: bytes) -> None:
        """Close a socket with a reason the client can read; a client that does not finish
        the close handshake within a second is cut off."""
        task = asyncio.create_task(self._close(conn, code, message),
                                   name=f"ws-close:{conn.user_id}")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close(self, conn: Connection, code: int, message: bytes) -> None:
        try:
            await asyncio.wait_for(conn.ws.close(code=code, message=message), timeout=1.0)
        except (asyncio.TimeoutError, ConnectionError, RuntimeError):
            if isinstance(conn.transport, asyncio.Transport):
                conn.transport.abort()
        await self.unregister(conn)

    async def close_session(self, user_id: str, session_id: str) -> None:
        """Logout: close every socket that login session opened, in every process."""
        if self.redis is not None:
            await self.redis.publish(keys.hub_channel(), encode(_Envelope(
                user_id=user_id, data="", close_session=session_id)))
        else:
            self._close_session_here(user_id, session_id)

    def _close_session_here(self, user_id: str, session_id: str) -> None:
        for conn in list(self._by_user.get(user_id, ())):
            if conn.session_id == session_id:
                log.info("websocket closed: logged out", extra=fields(user_id=user_id))
                self._close_soon(conn, 4401, b"logged out")

    # --- publishing -----------------------------------------------------------------------
    async def publish(self, user_id: str, message: WsMessage) -> None:
        data = encode(message).decode()
        if self.redis is not None:
            await self.redis.publish(keys.hub_channel(),
                                     encode(_Envelope(user_id=user_id, data=data)))
        else:
            self.fan_out(user_id, data)

    def fan_out(self, user_id: str, data: str) -> None:
        for conn in list(self._by_user.get(user_id, ())):
            if not conn.offer(data):
                self._drop(conn, "send queue full")

    async def close_all(self) -> None:
        for conns in list(self._by_user.values()):
            for conn in list(conns):
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(conn.ws.close(code=1001, message=b"server stopping"),
                                           timeout=1.0)
                await self.unregister(conn)

    # --- multi-process listener -----------------------------------------------------------
    async def start(self) -> None:
        if self.redis is None:
            return
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(keys.hub_channel())
        self._listener = asyncio.create_task(self._listen(pubsub), name="hub-listener")

    async def stop(self) -> None:
        if self._listener is not None:
            await cancel_and_wait([self._listener])
        await cancel_and_wait(list(self._closing))
        await self.close_all()

    async def _listen(self, pubsub: aioredis.client.PubSub) -> None:
        try:
            async for item in pubsub.listen():
                try:
                    envelope = _ENVELOPE.decode(item["data"])
                except msgspec.DecodeError:
                    log.error("unreadable hub message dropped")
                    continue
                if envelope.close_session is not None:
                    self._close_session_here(envelope.user_id, envelope.close_session)
                    continue
                self.fan_out(envelope.user_id, envelope.data)
        finally:
            await pubsub.aclose()
