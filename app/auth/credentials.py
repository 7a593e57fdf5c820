"""Who a caller is (design §1, §9): API tokens, login sessions, start codes and the login
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
  sets the session cookie. A login session lives in Redis under the SHA-256 of its id (the
  cookie's value; `token_hash`, as tokens): a Redis shared by several processes may be
  reachable by more than Novaberg, and there a list of its keys gives no session away, and a
  key written by hand opens none (that needs the id whose hash it is).
- Scripts send `Authorization: Bearer <token>`; the WebSocket also accepts `?token=`.
- A second start of the desktop binary asks the running app for a start link with the
  app's launch secret (`LaunchSecret`): a value of this process alone, written only into
  the data dir's instance file (mode 0600, `app.storage.datadir`), that opens nothing but a
  new start link — not the API token, so the file never holds a credential for the API.

The `user_id` of a request always comes from here (through `app.api.middleware`), never
from its body. What authenticated it is its `Credential`: an open WebSocket keeps its
credential and lives only as long as `Auth.valid` still finds it (a revoked token, an ended
or purged session, a deleted user's tokens end their sockets; `app.runtime.hub`).

One module: the ways a caller is known (tokens, sessions, start codes, the launch secret) and
the login throttle, all read by `Auth`, which resolves who is asking.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import math
import secrets
import sqlite3
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Literal

import redis.asyncio as aioredis

from app.auth.accounts import LOCAL_USER, hash_password, new_token, token_hash, verify_password
from app.core.log import fields
from app.core.refusal import RefusedKind
from app.memory import keys
from app.storage.database import Database

log = logging.getLogger(__name__)

SESSION_TTL_SECONDS = 30 * 24 * 3600
MAX_START_CODES = 16
START_CODE_SECONDS = 10 * 60  # a start link works this long after it was made
LOGIN_FAILURES_MEMORY_SECONDS = 24 * 3600  # failed logins count until a day without one
IPV6_CLIENT_PREFIX = 64  # the IPv6 addresses one client gets (`client_key`)


class StartCodes:
    """Single-use values that the desktop start link carries instead of the API token.

    Desktop mode is one process, so they live in memory. A code opens one browser session
    for `local` within `START_CODE_SECONDS` of being issued and is gone; at most
    `MAX_START_CODES` are outstanding (the oldest go first). Codes are shown on the terminal
    and in the command line that opens the browser, where other local users may read them:
    by the time they could, the browser has used it, and one nobody used ends with its
    lifetime (a new link: `POST /api/start-link` with the API token, or a restart).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._codes: dict[str, float] = {}  # code -> when it was issued, oldest first

    def __len__(self) -> int:
        self._forget_expired()
        return len(self._codes)

    def issue(self) -> str:
        self._forget_expired()
        code = new_token()
        self._codes[code] = self.clock()
        while len(self._codes) > MAX_START_CODES:
            del self._codes[next(iter(self._codes))]
            log.warning(
                "oldest start link dropped: too many outstanding",
                extra=fields(limit="MAX_START_CODES", outstanding=MAX_START_CODES),
            )
        return code

    def redeem(self, code: str) -> bool:
        self._forget_expired()
        for known in list(self._codes):
            if hmac.compare_digest(known.encode(), code.encode()):
                del self._codes[known]
                return True
        return False

    def _forget_expired(self) -> None:
        oldest_allowed = self.clock() - START_CODE_SECONDS
        expired = 0
        for code, issued in list(self._codes.items()):
            if issued >= oldest_allowed:
                break  # in order of issue: the rest are younger
            del self._codes[code]
            expired += 1
        if expired:
            log.warning(
                "start links expired unused",
                extra=fields(count=expired, limit="START_CODE_SECONDS", seconds=START_CODE_SECONDS),
            )


class LaunchSecret:
    """The value a second start of the binary shows to get a start link (see the module).
    New per process; compared in constant time."""

    def __init__(self) -> None:
        self.value = new_token()

    def matches(self, candidate: str) -> bool:
        return hmac.compare_digest(candidate.encode(), self.value.encode())


class LoginBackoff(RefusedKind):
    """A login that must wait: its name from its address, or its address, failed too often
    (429 `login_backoff`, with `Retry-After`)."""

    STATUS, CODE = 429, "login_backoff"

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            f"too many failed logins; try again in {retry_after} s",
            headers={"Retry-After": str(retry_after)},
        )
        self.retry_after = retry_after


# One atomic step per login attempt, before the password is checked: refuse when the
# (name, address) pair or the address must wait; else count the attempt as a failure up front
# (a success takes it back), so that a burst of concurrent guesses gets no more tries than
# guesses one after the other. Returns {pair wait ms, address wait ms, name wait ms}.
# KEYS: failures of pair, address, name; waits of pair, address, name.
# ARGV: free failures of pair, address, name; longest wait of pair/address, of the name (s);
# how long failures are remembered (s).
_ATTEMPT = """
local pair_wait = redis.call('PTTL', KEYS[4])
local address_wait = redis.call('PTTL', KEYS[5])
if pair_wait > 0 or address_wait > 0 then
  return {pair_wait, address_wait, 0}
end
local name_wait = math.max(redis.call('PTTL', KEYS[6]), 0)
local caps = {ARGV[4], ARGV[4], ARGV[5]}
for i = 1, 3 do
  local count = redis.call('INCR', KEYS[i])
  redis.call('EXPIRE', KEYS[i], ARGV[6])
  local free = tonumber(ARGV[i])
  if count >= free then
    local seconds = math.min(2 ^ math.min(count - free, 40), tonumber(caps[i]))
    redis.call('SET', KEYS[i + 3], count, 'PX', math.floor(seconds * 1000))
  end
end
return {0, 0, name_wait}
"""

# A success takes its attempt back: the pair's and the name's failures end; the address keeps
# its other failures (a guesser who owns an account cannot clear them by logging in).
# KEYS: failures and wait of the pair, of the name, of the address. ARGV: free of the address.
_SUCCESS = """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
local left = redis.call('DECR', KEYS[5])
if left < tonumber(ARGV[1]) then redis.call('DEL', KEYS[6]) end
if left <= 0 then redis.call('DEL', KEYS[5]) end
return left
"""


class LoginThrottle:
    """Backoff after failed logins, kept in Redis so that it holds across processes.

    Three counts, each remembered until `LOGIN_FAILURES_MEMORY_SECONDS` without a failure
    (an address is `client_key`'s: an IPv6 client by its /64):
    - a name from one address: after `free_failures`, each further try from there must
      wait 1 s, doubling per failure up to `max_delay` (`LoginBackoff`: 429, Retry-After);
    - an address, over every name: the same after `address_free_failures`;
    - a name, from every address: after `free_failures` a try only waits (1 s, doubling, at
      most `name_max_delay`) before its password is checked — never refused. Whoever guesses
      at a name cannot lock its owner out; her right password from an address that has not
      failed always gets in.
    A success ends the failures of its name (from every address); an address's count only
    expires. Failures, refusals and waits are logged with the name, never the password.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        free_failures: int = 5,
        max_delay: int = 900,
        *,
        address_free_failures: int = 20,
        name_max_delay: int = 30,
    ) -> None:
        self.redis = redis
        self.free_failures = free_failures
        self.max_delay = max_delay
        self.address_free_failures = address_free_failures
        self.name_max_delay = name_max_delay
        self._attempt = redis.register_script(_ATTEMPT)
        self._success = redis.register_script(_SUCCESS)

    @staticmethod
    def subjects(name: str, client: str) -> tuple[tuple[str, str], ...]:
        """The (kind, who) of the pair, the address and the name, for `keys.login_*`. A name
        that cannot exist still counts, under a bounded key; the address is `client_key`'s."""
        who = name if len(name) <= 64 else token_hash(name)
        address = client_key(client)
        return (("pair", f"{who}@{address}"), ("client", address), ("name", who))

    async def attempt(self, name: str, client: str) -> float:
        """Count a login attempt before its password is checked. Raises `LoginBackoff` when
        the name from this address, or this address, must wait; returns the seconds the try
        must wait first because its name failed often (0 when it need not)."""
        subjects = self.subjects(name, client)
        pair_ms, client_ms, name_ms = await self._attempt(
            keys=[
                *(keys.login_failures(k, w) for k, w in subjects),
                *(keys.login_blocked(k, w) for k, w in subjects),
            ],
            args=[
                self.free_failures,
                self.address_free_failures,
                self.free_failures,
                self.max_delay,
                self.name_max_delay,
                LOGIN_FAILURES_MEMORY_SECONDS,
            ],
        )
        if pair_ms > 0 or client_ms > 0:
            retry_after = math.ceil(max(pair_ms, client_ms) / 1000)
            log.warning(
                "login refused: backoff after failed logins",
                extra=fields(
                    name=name[:64],
                    client=client,
                    retry_after=retry_after,
                    by="name and client" if pair_ms >= client_ms else "client",
                    setting="login_free_failures"
                    if pair_ms >= client_ms
                    else "login_client_free_failures",
                ),
            )
            raise LoginBackoff(retry_after)
        delay = min(name_ms / 1000, self.name_max_delay)
        if delay > 0:
            log.warning(
                "login slowed: the name failed often from other addresses",
                extra=fields(
                    name=name[:64],
                    client=client,
                    delay_s=round(delay, 3),
                    setting="login_name_max_delay_seconds",
                ),
            )
        return delay

    async def failed(self, name: str, client: str) -> None:
        """The attempt failed (it was counted as a failure already): log it."""
        who = self.subjects(name, client)
        counts = await self.redis.mget([keys.login_failures(k, w) for k, w in who])
        log.warning(
            "login failed",
            extra=fields(
                name=name[:64],
                client=client,
                failures=dict(
                    zip(
                        ("name_and_client", "client", "name"),
                        (int(c or 0) for c in counts),
                        strict=True,
                    )
                ),
            ),
        )

    async def succeeded(self, name: str, client: str) -> None:
        pair, address, by_name = self.subjects(name, client)
        await self._success(
            keys=[
                keys.login_failures(*pair),
                keys.login_blocked(*pair),
                keys.login_failures(*by_name),
                keys.login_blocked(*by_name),
                keys.login_failures(*address),
                keys.login_blocked(*address),
            ],
            args=[self.address_free_failures],
        )


def client_key(client: str) -> str:
    """The address a login's failures count under: an IPv4 address as it is (an IPv4-mapped
    IPv6 one too), an IPv6 address by its /64 — one host or LAN gets a whole /64, and every
    address of it is the same guesser (else each guess could come from an address of its
    own). Anything else (no address: "-") as it is."""
    try:
        address = ipaddress.ip_address(client.split("%", 1)[0])
    except ValueError:
        return client[:64]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


@dataclass(frozen=True, slots=True)
class Credential:
    """What authenticated a request: `local`'s own token, an API token or a login session
    (each by its hash, what the store keys it by: the secret itself is not kept)."""

    kind: Literal["local", "token", "session"]
    value: str = field(repr=False)
    user_id: str


CHECK_BATCH = 500  # credentials looked up per query


class Auth:
    """Resolves a token or a login session to a user id; logs users in."""

    def __init__(
        self,
        db: Database,
        redis: aioredis.Redis,
        local_token: str | None,
        public_origin: str | None,
        host: str,
        *,
        throttle: LoginThrottle | None = None,
    ) -> None:
        self.db = db
        self.throttle = throttle or LoginThrottle(redis)
        self.start_codes = StartCodes()
        self.launch = LaunchSecret()
        self.redis = redis
        self.local_token = local_token
        self.public_origin = public_origin.rstrip("/") if public_origin else None
        self.host = host

    async def credential_for_token(self, token: str) -> Credential | None:
        if self.local_token and hmac.compare_digest(token.encode(), self.local_token.encode()):
            return Credential("local", "", LOCAL_USER)
        digest = token_hash(token)

        def _find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT user_id FROM api_tokens WHERE token_hash = ?", (digest,)
            ).fetchone()
            return row[0] if row else None

        user_id = await self.db.execute_fn(_find)
        return Credential("token", digest, user_id) if user_id is not None else None

    async def user_for_token(self, token: str) -> str | None:
        credential = await self.credential_for_token(token)
        return credential.user_id if credential is not None else None

    async def valid(self, credentials: Collection[Credential]) -> set[Credential]:
        """Those of `credentials` that would still authenticate a request: `local`'s token
        always, an API token while its row exists, a session while Redis keeps it for its
        user. Two lookups for all of them (tokens in SQLite, sessions in Redis)."""
        valid = {c for c in credentials if c.kind == "local"}
        sessions = [c for c in credentials if c.kind == "session"]
        for start in range(0, len(sessions), CHECK_BATCH):
            batch = sessions[start : start + CHECK_BATCH]
            owners = await self.redis.mget([keys.auth_session(c.value) for c in batch])
            valid.update(
                c for c, owner in zip(batch, owners, strict=True) if _text(owner) == c.user_id
            )
        tokens = [c for c in credentials if c.kind == "token"]

        def _existing(conn: sqlite3.Connection) -> set[tuple[str, str]]:
            found: set[tuple[str, str]] = set()
            for start in range(0, len(tokens), CHECK_BATCH):
                digests = [c.value for c in tokens[start : start + CHECK_BATCH]]
                found.update(
                    (row[0], row[1])
                    for row in conn.execute(
                        f"SELECT token_hash, user_id FROM api_tokens WHERE token_hash IN "
                        f"({', '.join('?' * len(digests))})",
                        digests,
                    )
                )
            return found

        if tokens:
            existing = await self.db.execute_fn(_existing)
            valid.update(c for c in tokens if (c.value, c.user_id) in existing)
        return valid

    async def login(self, name: str, password: str, client: str) -> str | None:
        """The user for a right name and password, else None. A name or client that failed
        too often must wait first (`LoginBackoff`), a name that failed often from elsewhere
        only slows the try (`LoginThrottle`); the hash runs off the event loop."""
        delay = await self.throttle.attempt(name, client)
        if delay > 0:
            await asyncio.sleep(delay)

        def _find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT password_hash FROM users WHERE user_id = ?", (name,)
            ).fetchone()
            return row[0] if row else None

        stored = await self.db.execute_fn(_find)
        # Verify against a dummy hash for unknown names, so timing does not reveal them.
        ok = await asyncio.to_thread(verify_password, password, stored or _DUMMY_HASH)
        if stored and ok:
            await self.throttle.succeeded(name, client)
            return name
        await self.throttle.failed(name, client)
        return None

    async def new_session(self, user_id: str) -> str:
        """A new login session of `user_id`; its id (the cookie's value) is returned, only
        its hash is stored."""
        session_id = new_token()
        await self.redis.set(
            keys.auth_session(token_hash(session_id)), user_id, ex=SESSION_TTL_SECONDS
        )
        return session_id

    async def end_session(self, session_id: str) -> None:
        await self.redis.delete(keys.auth_session(token_hash(session_id)))

    async def credential_for_session(self, session_id: str) -> Credential | None:
        digest = token_hash(session_id)
        user_id = _text(await self.redis.get(keys.auth_session(digest)))
        return Credential("session", digest, user_id) if user_id is not None else None


def _text(value: str | bytes | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


_DUMMY_HASH = hash_password(secrets.token_hex(8))
