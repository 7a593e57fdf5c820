"""The delivery hub: every WebSocket of a user gets every message for that user (design §5, §9).

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

A socket lives only as long as what opened it still authenticates: each connection keeps its
credential (opaque here; `app.auth.credentials.Credential`), and every
`CREDENTIAL_CHECK_SECONDS` the hub asks which of its connections' credentials are still valid
(one lookup for all) and closes the others with 4401 — a revoked token, a session logged out
or purged with a deleted user, in every process, whoever ended it and however. A logout
here wakes the check at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any

import msgspec
import redis.asyncio as aioredis
from aiohttp import web

from app.core.background import Ticker, cancel_and_wait
from app.core.log import fields
from app.memory import keys
from app.runtime.wire import WS_DECODER, MessageAccepted, TurnState, WsAny, WsMessage, encode

log = logging.getLogger(__name__)


CREDENTIAL_CHECK_SECONDS = 0.5  # a revoked credential's sockets close within a second
CREDENTIAL_CHECK_RETRY_SECONDS = 5.0  # after a failed check (Redis or the database away)
CREDENTIALS_ENDED = 4401  # the close code a tab reads as "log in again"

# Which of these credentials still authenticate (`app.auth.credentials.Auth.valid`).
CredentialCheck = Callable[[set[Any]], Awaitable[set[Any]]]


class _Envelope(msgspec.Struct):
    user_id: str
    data: str


_ENVELOPE = msgspec.json.Decoder(_Envelope)


def _identity(message: WsMessage | WsAny) -> tuple[str, str] | None:
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

    def __init__(
        self,
        user_id: str,
        ws: web.WebSocketResponse,
        transport: asyncio.BaseTransport | None,
        maxsize: int,
        credential: Hashable | None = None,
    ) -> None:
        self.user_id = user_id
        self.credential = credential  # what opened it; None: not checked
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
        return all(self.offer(data) for data in (*fresh, *held))

    async def run_writer(self) -> None:
        while True:
            data = await self.queue.get()
            await self.ws.send_str(data)


class Hub:
    def __init__(
        self,
        send_queue: int,
        redis: aioredis.Redis | None = None,
        max_per_user: int | None = None,
        credentials_valid: CredentialCheck | None = None,
    ) -> None:
        self.send_queue = send_queue
        self.max_per_user = max_per_user
        self.redis = redis  # set: multi-process mode, fan out through a Redis channel
        self._by_user: dict[str, set[Connection]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._credentials_valid = credentials_valid
        self.credential_check: Ticker[int] | None = (
            Ticker(
                "ws-credentials",
                self._close_ended,
                interval=CREDENTIAL_CHECK_SECONDS,
                error_delay=CREDENTIAL_CHECK_RETRY_SECONDS,
                logger=log,
            )
            if credentials_valid is not None
            else None
        )

    # --- connections ----------------------------------------------------------------------
    def register(
        self,
        user_id: str,
        ws: web.WebSocketResponse,
        transport: asyncio.BaseTransport | None,
        credential: Hashable | None = None,
    ) -> Connection:
        conn = Connection(user_id, ws, transport, self.send_queue, credential)
        conns = self._by_user.setdefault(user_id, set())
        while self.max_per_user is not None and len(conns) >= self.max_per_user:
            oldest = min(conns, key=lambda c: c.opened_at)
            log.warning(
                "websocket closed: too many per user",
                extra=fields(
                    user_id=user_id, limit=self.max_per_user, setting="max_sockets_per_user"
                ),
            )
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
        log.warning(
            "websocket dropped",
            extra=fields(
                user_id=conn.user_id, why=why, limit=self.send_queue, setting="ws_send_queue"
            ),
        )
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
        task = asyncio.create_task(
            self._close(conn, code, message), name=f"ws-close:{conn.user_id}"
        )
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close(self, conn: Connection, code: int, message: bytes) -> None:
        try:
            await asyncio.wait_for(conn.ws.close(code=code, message=message), timeout=1.0)
        except (TimeoutError, ConnectionError, RuntimeError):
            if isinstance(conn.transport, asyncio.Transport):
                conn.transport.abort()
        await self.unregister(conn)

    # --- credentials ----------------------------------------------------------------------
    def check_credentials_now(self) -> None:
        """Check every socket's credential now (a logout here), not at the next round."""
        if self.credential_check is not None:
            self.credential_check.wake()

    async def _close_ended(self) -> int:
        """Close the sockets whose credential no longer authenticates; returns how many."""
        assert self._credentials_valid is not None
        checked = [c for conns in self._by_user.values() for c in conns if c.credential is not None]
        if not checked:
            return 0
        valid = await self._credentials_valid({c.credential for c in checked})
        ended = [c for c in checked if c.credential not in valid and not c.dropped]
        for conn in ended:
            log.info("websocket closed: its credentials ended", extra=fields(user_id=conn.user_id))
            conns = self._by_user.get(conn.user_id)
            if conns is not None:
                conns.discard(conn)  # nothing more is sent to it meanwhile
            self._close_soon(conn, CREDENTIALS_ENDED, b"credentials ended")
        return len(ended)

    # --- publishing -----------------------------------------------------------------------
    async def publish(self, user_id: str, message: WsMessage) -> None:
        shared = self.envelope(user_id, message)
        if shared is not None:
            assert self.redis is not None  # an envelope is made only with a Redis to send it
            await self.redis.publish(*shared)
        else:
            self.fan_out(user_id, encode(message).decode())

    def envelope(self, user_id: str, message: WsMessage) -> tuple[str, bytes] | None:
        """With an external Redis: the (channel, payload) that publishes `message` to the
        user's tabs in every process — for a caller that publishes it in a call of its own
        (the accept script); None with the embedded Redis (`fan_out` then)."""
        if self.redis is None:
            return None
        return keys.hub_channel(), encode(_Envelope(user_id=user_id, data=encode(message).decode()))

    def fan_out(self, user_id: str, data: str) -> None:
        for conn in list(self._by_user.get(user_id, ())):
            if not conn.offer(data):
                self._drop(conn, "send queue full")

    async def close_all(self) -> None:
        for conns in list(self._by_user.values()):
            for conn in list(conns):
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        conn.ws.close(code=1001, message=b"server stopping"), timeout=1.0
                    )
                await self.unregister(conn)

    # --- multi-process listener -----------------------------------------------------------
    async def start(self) -> None:
        if self.credential_check is not None:
            await self.credential_check.start()
        if self.redis is None:
            return
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(keys.hub_channel())
        self._listener = asyncio.create_task(self._listen(pubsub), name="hub-listener")

    async def stop(self) -> None:
        if self.credential_check is not None:
            await self.credential_check.stop()
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
                self.fan_out(envelope.user_id, envelope.data)
        finally:
            await pubsub.aclose()
