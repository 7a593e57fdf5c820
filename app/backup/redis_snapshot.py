r"""The Redis part of a backup: every Novaberg key as typed JSON lines, TTLs kept.

Format (`redis.jsonl`, one key per line, UTF-8):

    {"key": "session:local:nova:turns", "type": "list", "ttl_ms": 14395000, "value": ["…", …]}

`type` is one of string (value: str), list (list of str), hash (object), set (sorted list of
str), zset (list of [member, score]; the score a number or, as the server writes it, its
text). `ttl_ms` is the time the key had left when it was read
(null: no expiry); a restore gives it the same time again. Values are the stored bytes as
UTF-8; a byte that is not UTF-8 is kept through `surrogateescape` (written as a `\udcXX`
escape, so every line stays valid UTF-8).

Why not DUMP/RESTORE: its payload is tied to the server's RDB version, so a snapshot from a
newer external Redis or Valkey would not load into the older embedded one. Plain commands load
anywhere, and the file can be read (and grepped for secrets) by the user.

Which keys: everything in Novaberg's Redis database except what `keys.transient` names
(heartbeats, login sessions and login throttling, run slots, turn markers, summary locks),
so a key added later is backed up without a change here. An external Redis is expected to
hold only Novaberg's keys in its database (use a database number of its own).

Consistency: with the embedded Redis (the default) the snapshot is one moment of the server:
`write_point_in_time` has it save a background snapshot (a fork; the app is not held up) and
reads that. With an external Redis, whose files are not ours to read, keys are read live in
batches of `BATCH`, each one moment of the server; what belongs together across batches can
be torn by a write in between (an open turn whose event is missing, say), which the
runtime's recovery does not repair: back up an external Redis with its own tools
(RDB/AOF) as well. The SQLite copy is taken first, so a message in its log has its turn
record in the snapshot (the record is written before the log row, and lives longer).

One module: the snapshot's writer and its checked reader are the two sides of one format.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import redis

from app.memory import keys
from app.storage import redis_driver

BATCH = 500
CHUNK = 5000  # keys per SCAN step of a private server (`write_private_snapshot`)
RDB_FILE = "dump.rdb"  # the embedded server's --dbfilename (app.storage.embedded_redis)
SAVE_TIMEOUT_SECONDS = 120.0
LOAD_BATCH = 1000
# The snapshot server is a process of its own: it can yield the CPU to the app. The backup's
# thread cannot — it shares the GIL with the event loop, and a lowered thread that is
# preempted while it holds the GIL keeps the loop waiting (priority inversion: with nice +10
# on a loaded machine the loop woke up to 750 ms late).
SNAPSHOT_SERVER_NICE = 10

# One key's snapshot line (made by the server's cjson), or nil for a key that is gone; or
# nil and the problem. Parsing many small reply elements and encoding them again in Python
# would be the slowest part of a backup by far. Zset scores travel as the server's text
# (cjson would round them to 14 digits) and are read back as numbers.
_LINE_OF = """
local function line_of(key)
  local kind = redis.call('TYPE', key)['ok']
  local value
  if kind == 'string' then value = redis.call('GET', key)
  elseif kind == 'list' then value = redis.call('LRANGE', key, 0, -1)
  elseif kind == 'set' then value = redis.call('SMEMBERS', key); table.sort(value)
  elseif kind == 'hash' then
    local flat = redis.call('HGETALL', key)
    value = {}
    for i = 1, #flat, 2 do value[flat[i]] = flat[i + 1] end
  elseif kind == 'zset' then
    local flat = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    value = {}
    for i = 1, #flat, 2 do value[#value + 1] = {flat[i], flat[i + 1]} end
  elseif kind ~= 'none' then
    return nil, 'key ' .. key .. ' has type ' .. kind .. ', which a backup cannot hold'
  end
  if value == nil then return nil end
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then ttl = cjson.null end
  return cjson.encode({key = key, type = kind, ttl_ms = ttl, value = value})
end
"""
# One batch of keys (KEYS), read in one step of the server, answered as their lines. Values
# that are not UTF-8 make the answer undecodable; such a batch is read again with
# `_READ_BATCH_RAW`.
_READ_BATCH_LINES = (
    _LINE_OF
    + """
local lines = {}
for _, key in ipairs(KEYS) do
  local line, problem = line_of(key)
  if problem then return redis.error_reply(problem) end
  if line then lines[#lines + 1] = line end
end
return table.concat(lines, '\\n')
"""
)
# A private server's keys, a SCAN step at a time (ARGV: cursor, COUNT, the rules of
# `keys.transient` as JSON), the transient keys left out by the server itself: answers
# {next cursor, the lines, how many}. The backup's thread then only moves a few large
# strings — no reply element per key, no Python work per key (which, on a thread beside the
# serving loop, is the loop's lag: every step of it takes the GIL). Only for a server
# nobody else uses: one call holds the server for a whole chunk.
_READ_CHUNK_LINES = (
    _LINE_OF
    + """
local rules = cjson.decode(ARGV[3])
local function transient(key)
  for _, prefix in ipairs(rules.prefixes) do
    if string.sub(key, 1, #prefix) == prefix then return true end
  end
  for _, name in ipairs(rules.keys) do
    if key == name then return true end
  end
  for _, suffix in ipairs(rules.suffixes) do
    if #key >= #suffix and string.sub(key, -#suffix) == suffix then return true end
  end
  return false
end
local scanned = redis.call('SCAN', ARGV[1], 'COUNT', ARGV[2])
local lines = {}
for _, key in ipairs(scanned[2]) do
  if not transient(key) then
    local line, problem = line_of(key)
    if problem then return redis.error_reply(problem) end
    if line then lines[#lines + 1] = line end
  end
end
return {scanned[1], table.concat(lines, '\\n'), #lines}
"""
)
_READ_BATCH_RAW = """
local out = {}
for i, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key)['ok']
  local value = false
  if kind == 'string' then value = redis.call('GET', key)
  elseif kind == 'list' then value = redis.call('LRANGE', key, 0, -1)
  elseif kind == 'hash' then value = redis.call('HGETALL', key)
  elseif kind == 'set' then value = redis.call('SMEMBERS', key)
  elseif kind == 'zset' then value = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  end
  out[i] = {kind, redis.call('PTTL', key), value}
end
return out
"""

# Writes one batch of records (ARGV[1]: a JSON list of [key, type, ttl_ms, value], zset
# scores as strings so that no digit is lost) in one step of the server.
_WRITE_BATCH = """
local function push(command, key, items)
  for i = 1, #items, 1000 do
    redis.call(command, key, unpack(items, i, math.min(i + 999, #items)))
  end
end
for _, record in ipairs(cjson.decode(ARGV[1])) do
  local key, kind, ttl, value = record[1], record[2], record[3], record[4]
  redis.call('DEL', key)
  if kind == 'string' then redis.call('SET', key, value)
  elseif kind == 'list' then push('RPUSH', key, value)
  elseif kind == 'set' then push('SADD', key, value)
  elseif kind == 'hash' or kind == 'zset' then push(kind == 'hash' and 'HSET' or 'ZADD', key, value)
  end
  if ttl ~= cjson.null and ttl > 0 and redis.call('EXISTS', key) == 1 then
    redis.call('PEXPIRE', key, ttl)
  end
end
return 0
"""

TYPES = ("string", "list", "hash", "set", "zset")


class SnapshotError(RuntimeError):
    """A snapshot line that cannot be loaded; names the line and what is wrong."""


class Cancelled(Exception):
    """The caller asked the snapshot to stop (the app is shutting down)."""


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def connect(url: str) -> redis.Redis:
    return redis_driver.client(url, decode_responses=False, socket_timeout=60)


def backed_up_keys(client: redis.Redis) -> Iterator[str]:
    for raw in client.scan_iter(count=1000):
        key = _text(raw)
        if not keys.transient(key):
            yield key


def _record(key: str, kind: str, ttl: int, value: Any) -> dict[str, Any] | None:
    """A snapshot record from the raw read script's answer (bytes)."""
    if kind == "none":  # expired or deleted between SCAN and the read
        return None
    if kind not in TYPES:
        raise SnapshotError(f"key {key!r} has type {kind!r}, which a backup cannot hold")
    if kind == "string":
        data: Any = _text(value)
    elif kind == "list":
        data = [_text(v) for v in value]
    elif kind == "hash":
        data = {_text(value[i]): _text(value[i + 1]) for i in range(0, len(value), 2)}
    elif kind == "set":
        data = sorted(_text(v) for v in value)
    else:
        data = [[_text(value[i]), float(value[i + 1])] for i in range(0, len(value), 2)]
    return {"key": key, "type": kind, "ttl_ms": ttl if ttl > 0 else None, "value": data}


def write_snapshot(
    client: redis.Redis, out: IO[str], should_stop: Callable[[], bool] = lambda: False
) -> int:
    """Write every backed-up key to `out`; returns how many were written."""
    read_lines = client.register_script(_READ_BATCH_LINES)
    read_raw = client.register_script(_READ_BATCH_RAW)
    written = 0
    batch: list[str] = []

    def flush() -> int:
        try:
            reply = read_lines(keys=batch)
        except redis.ResponseError as exc:
            raise SnapshotError(str(exc)) from None
        try:
            text = reply.decode("utf-8")
            lines = text.count("\n") + 1 if text else 0
            if text:
                out.write(text + "\n")
        except UnicodeDecodeError:  # a value that is not UTF-8: read this batch raw
            lines = 0
            for key, (kind, ttl, value) in zip(batch, read_raw(keys=batch), strict=True):
                record = _record(key, _text(kind), int(ttl), value)
                if record is not None:  # escaped (\udcff): the line stays valid UTF-8
                    out.write(json.dumps(record) + "\n")
                    lines += 1
        batch.clear()
        return lines

    for key in backed_up_keys(client):
        batch.append(key)
        if len(batch) >= BATCH:
            if should_stop():
                raise Cancelled
            written += flush()
    if batch:
        written += flush()
    return written


def write_private_snapshot(
    client: redis.Redis, out: IO[str], should_stop: Callable[[], bool] = lambda: False
) -> int:
    """`write_snapshot` for a server that nobody else uses (the backup's snapshot server, the
    data dir's own while a restore holds it): the server walks its keys in chunks of
    `CHUNK` and answers the lines itself. A chunk that is not UTF-8 (the app writes UTF-8;
    possible only for a key written from outside) sends the whole snapshot back to
    `write_snapshot`, which reads such values raw."""
    read_chunk = client.register_script(_READ_CHUNK_LINES)
    rules = json.dumps(keys.transient_rules())
    start = out.tell()
    cursor, written = b"0", 0
    while True:
        if should_stop():
            raise Cancelled
        try:
            cursor, reply, lines = read_chunk(args=[cursor, CHUNK, rules])
        except redis.ResponseError as exc:
            raise SnapshotError(str(exc)) from None
        try:
            text = reply.decode("utf-8")
        except UnicodeDecodeError:
            out.seek(start)
            out.truncate()
            return write_snapshot(client, out, should_stop)
        if text:
            out.write(text + "\n")
            written += lines
        if cursor == b"0":
            return written


def write_point_in_time(
    client: redis.Redis,
    directory: Path,
    out: IO[str],
    should_stop: Callable[[], bool] = lambda: False,
) -> int:
    """Write every backed-up key of the embedded Redis whose files are in `directory`, as of
    one moment: the server saves a snapshot in the background (BGSAVE: a fork, so the app's
    commands are not held up), and a private server started on that file is read at leisure.
    Reading the live server batch by batch could tear what belongs together (a turn record
    from after, its event queue from before a step), and a restore would carry that on."""
    from app.storage.embedded_redis import EmbeddedRedis  # the backup reads with the same binary

    saved = directory / RDB_FILE
    saved.unlink(missing_ok=True)  # the save is done when the file is there (renamed at the end)
    client.bgsave(schedule=True)
    deadline = time.monotonic() + SAVE_TIMEOUT_SECONDS
    while not saved.exists() or client.info("persistence")["rdb_bgsave_in_progress"]:
        if time.monotonic() > deadline:
            raise SnapshotError(f"Redis did not save a snapshot within {SAVE_TIMEOUT_SECONDS} s")
        if should_stop():
            raise Cancelled
        time.sleep(0.01)
    if client.info("persistence")["rdb_last_bgsave_status"] != "ok":
        raise SnapshotError(f"Redis could not save a snapshot (see {directory}/redis.log)")
    with tempfile.TemporaryDirectory(
        prefix="nb-snap-"
    ) as tmp:  # short: a socket path is ≤ 107 bytes
        shutil.move(saved, Path(tmp) / RDB_FILE)
        server = EmbeddedRedis(
            Path(tmp), appendfsync="no", appendonly=False, nice=SNAPSHOT_SERVER_NICE
        )
        server.start()
        private = connect(server.url)
        try:
            return write_private_snapshot(private, out, should_stop)
        finally:
            private.close()
            server.stop()


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a snapshot file, each checked; a bad line raises `SnapshotError`."""
    with path.open(encoding="utf-8", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SnapshotError(f"{path.name} line {number}: not JSON ({exc.msg})") from None
            problem = _problem(record)
            if problem:
                raise SnapshotError(f"{path.name} line {number}: {problem}")
            if record["type"] == "zset":  # the score as the server wrote it, as a number
                record["value"] = [[member, float(score)] for member, score in record["value"]]
            yield record


def _problem(record: Any) -> str | None:
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        return "not a key record"
    kind, value, ttl = record.get("type"), record.get("value"), record.get("ttl_ms")
    if kind not in TYPES:
        return f"key {record['key']!r}: unknown type {kind!r}"
    if ttl is not None and (not isinstance(ttl, int) or ttl <= 0):
        return f"key {record['key']!r}: bad ttl_ms {ttl!r}"
    expected = {"string": str, "list": list, "hash": dict, "set": list, "zset": list}[kind]
    if not isinstance(value, expected):
        return f"key {record['key']!r}: a {kind} needs a {expected.__name__} value"
    if kind == "zset" and not all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and _is_score(p[1])
        for p in value
    ):
        return f"key {record['key']!r}: a zset needs [member, score] pairs"
    if kind == "hash" and not all(isinstance(v, str) for v in value.values()):
        return f"key {record['key']!r}: a hash needs text values"
    if kind in ("list", "set") and not all(isinstance(v, str) for v in value):
        return f"key {record['key']!r}: a {kind} needs text items"
    return None


def _is_score(score: Any) -> bool:
    if isinstance(score, bool):
        return False
    if isinstance(score, (int, float)):
        return True
    try:
        float(score)
    except (TypeError, ValueError):
        return False
    return True


def delete_backed_up_keys(client: redis.Redis) -> int:
    """Remove every key a backup would hold (before loading one into a used database)."""
    deleted = 0
    batch: list[str] = []
    for key in backed_up_keys(client):
        batch.append(key)
        if len(batch) >= LOAD_BATCH:
            deleted += client.delete(*batch)
            batch.clear()
    if batch:
        deleted += client.delete(*batch)
    return deleted


def load_snapshot(client: redis.Redis, records: Iterable[dict[str, Any]]) -> int:
    """Write the records (replacing keys of the same name), a batch per server step; returns
    how many."""
    write = client.register_script(_WRITE_BATCH)
    loaded = 0
    batch: list[list[Any]] = []
    for record in records:
        if keys.transient(record["key"]):
            continue
        batch.append(_wire(record))
        loaded += 1
        if len(batch) >= LOAD_BATCH:
            write(args=[_batch_json(batch)])
            batch.clear()
    if batch:
        write(args=[_batch_json(batch)])
    return loaded


def _wire(record: dict[str, Any]) -> list[Any]:
    """[key, type, ttl_ms, flat value] as the write script takes it."""
    kind, value = record["type"], record["value"]
    if kind == "hash":
        value = [part for pair in value.items() for part in pair]
    elif kind == "zset":  # ZADD wants score, member; the score as text keeps every digit
        value = [part for member, score in value for part in (repr(float(score)), member)]
    return [record["key"], kind, record.get("ttl_ms"), value]


def _batch_json(batch: list[list[Any]]) -> bytes:
    # surrogateescape brings back the original bytes of a value that was not UTF-8
    return json.dumps(batch, ensure_ascii=False).encode("utf-8", "surrogateescape")
