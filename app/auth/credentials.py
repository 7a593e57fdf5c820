"""Who a caller is (SPEC §1, §9): API tokens, login sessions, start codes and the login
throttle.

Identities:
- `local` always exists. Its token is `--token`/`NOVABERG_TOKEN`, else (desktop mode) a new
  random one per start. The API token is never put in a URL: the desktop app opens the
  browser at `/?token=<start code>`, a single-use value distinct from the API token
  (`StartCodes`); that visit becomes a session cookie (HttpOnly, SameSite=Strict) for
  `local` and the code leaves the address bar. Only in desktop mode, never from a
  cross-site link (`Sec-Fetch-Site: cross-site`): a link cannot switch who you are.
- Headless users (`novaberg user add NAME`) have a scrypt password hash and API tokens in
  SQLite (`app.auth.accounts`; only the SHA-256 of a token is stored). `POST /api/login`
  sets the session cookie.
- Scripts send `Authorization: Bearer <token>`; the WebSocket also accepts `?token=`.
- A second start of the desktop binary asks the running app for a start link with the
  app's launch secret (`LaunchSecret`): a value of this process alone, written only into
  the data dir's instance file (mode 0600, `app.storage.datadir`), that opens nothing but a
  new start link — not the API token, so the file never holds a credential for the API.

The `user_id` of a request always comes from here (through `app.api.middleware`), never
from its body.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import math
import secrets
import sqlite3
import time

import redis.asyncio as aioredis

from app.auth.accounts import LOCAL_USER, hash_password, new_token, token_hash, verify_password
from app.memory import keys
from app.storage.database import Database

log = logging.getLogger(__name__)

SESSION_TTL_SECONDS = 30 * 24 * 3600
MAX_START_CODES = 16
LOGIN_FAILURES_MEMORY_SECONDS = 24 * 3600  # failed logins count until a day without one


class StartCodes:
    """Single-use values that the desktop start link carries instead of the API token.

    Desktop mode is one process, so they live in memory. A code opens one browser session
    for `local` and is gone; at most `MAX_START_CODES` are outstanding (the oldest go first).
    Codes are shown on the terminal and in the command line that opens the browser, where
    other local users may read them: by the time they could, the browser has used it.
    """

    def __init__(self) -> None:
        self._codes: dict[str, float] = {}

    def issue(self) -> str:
        code = new_token()
        self._codes[code] = time.time()
        while len(self._codes) > MAX_START_CODES:
            del self._codes[next(iter(self._codes))]
        return code

    def redeem(self, code: str) -> bool:
        for known in list(self._codes):
            if hmac.compare_digest(known.encode(), code.encode()):
                del self._codes[known]
                return True
        return False


class LaunchSecret:
    """The value a second start of the binary shows to get a start link (see the module).
    New per process; compared in constant time."""

    def __init__(self) -> None:
        self.value = new_token()

    def matches(self, candidate: str) -> bool:
        return hmac.compare_digest(candidate.encode(), self.value.encode())


class LoginBackoff(Exception):
    """A login that must wait: the name or the client failed too often."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many failed logins; try again in {retry_after} s")
        self.retry_after = retry_after


class LoginThrottle:
    """Backoff after failed logins, per user name and per client address, kept in Redis so
    that it holds across processes: after `free_failures` failures in a row each further
    try must wait 1 s, doubling per failure up to `max_delay` (`LoginBackoff`; the API answers 429 with Retry-After). A
    success clears the name's count; the client's count only expires (a guesser who also
    owns an account cannot reset it). A failure is logged with the name, never the password.
    """

    def __init__(self, redis: aioredis.Redis, free_failures: int = 5, max_delay: int = 900) -> None:
        self.redis = redis
        self.free_failures = free_failures
        self.max_delay = max_delay

    @staticmethod
    def _subjects(name: str, client: str) -> tuple[tuple[str, str], ...]:
        # A name that cannot exist still counts, under a bounded key.
        return (("name", name if len(name) <= 64 else token_hash(name)), ("client", client))

    async def check(self, name: str, client: str) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            for kind, who in self._subjects(name, client):
                pipe.pttl(keys.login_blocked(kind, who))
            waits = await pipe.execute()
        wait_ms = max(waits)
        if wait_ms > 0:
            retry_after = math.ceil(wait_ms / 1000)
            log.warning("login refused: backoff after failed logins", extra={"fields": {
                "name": name[:64], "client": client, "retry_after": retry_after,
                "setting": "login_free_failures"}})
            raise LoginBackoff(retry_after)

    async def failed(self, name: str, client: str) -> None:
        subjects = self._subjects(name, client)
        async with self.redis.pipeline(transaction=True) as pipe:
            for kind, who in subjects:
                pipe.incr(keys.login_failures(kind, who))
                pipe.expire(keys.login_failures(kind, who), LOGIN_FAILURES_MEMORY_SECONDS)
            counts = (await pipe.execute())[::2]
        async with self.redis.pipeline(transaction=False) as pipe:
            for (kind, who), count in zip(subjects, counts, strict=True):
                if count >= self.free_failures:
                    delay = min(2 ** (count - self.free_failures), self.max_delay)
                    pipe.set(keys.login_blocked(kind, who), count, ex=delay)
            await pipe.execute()
        log.warning("login failed", extra={"fields": {
            "name": name[:64], "client": client, "failures": max(counts)}})

    async def succeeded(self, name: str) -> None:
        await self.redis.delete(keys.login_failures("name", name),
                                keys.login_blocked("name", name))


class Auth:
    """Resolves a token or a login session to a user id; logs users in."""

    def __init__(self, db: Database, redis: aioredis.Redis, local_token: str | None,
                 public_origin: str | None, host: str, *,
                 throttle: LoginThrottle | None = None) -> None:
        self.db = db
        self.throttle = throttle or LoginThrottle(redis)
        self.start_codes = StartCodes()
        self.launch = LaunchSecret()
        self.redis = redis
        self.local_token = local_token
        self.public_origin = public_origin.rstrip("/") if public_origin else None
        self.host = host

    async def user_for_token(self, token: str) -> str | None:
        if self.local_token and hmac.compare_digest(token.encode(), self.local_token.encode()):
            return LOCAL_USER
        digest = token_hash(token)

        def _find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT user_id FROM api_tokens WHERE token_hash = ?",
                               (digest,)).fetchone()
            return row[0] if row else None

        return await self.db.execute_fn(_find)

    async def login(self, name: str, password: str, client: str) -> str | None:
        """The user for a right name and password, else None. A name or client that failed
        too often must wait first (`LoginBackoff`); the hash runs off the event loop."""
        await self.throttle.check(name, client)

        def _find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT password_hash FROM users WHERE user_id = ?",
                               (name,)).fetchone()
            return row[0] if row else None

        stored = await self.db.execute_fn(_find)
        # Verify against a dummy hash for unknown names, so timing does not reveal them.
        ok = await asyncio.to_thread(verify_password, password, stored or _DUMMY_HASH)
        if stored and ok:
            await self.throttle.succeeded(name)
            return name
        await self.throttle.failed(name, client)
        return None

    async def new_session(self, user_id: str) -> str:
        session_id = new_token()
        await self.redis.set(keys.auth_session(session_id), user_id, ex=SESSION_TTL_SECONDS)
        return session_id

    async def end_session(self, session_id: str) -> None:
        await self.redis.delete(keys.auth_session(session_id))

    async def user_for_session(self, session_id: str) -> str | None:
        value = await self.redis.get(keys.auth_session(session_id))
        return value.decode() if isinstance(value, bytes) else value



_DUMMY_HASH = hash_password(secrets.token_hex(8))
