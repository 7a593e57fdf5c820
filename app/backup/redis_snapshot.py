"""The Redis part of a backup: every Novaberg key as typed JSON lines, TTLs kept.

Format (`redis.jsonl`, one key per line, UTF-8):

    {"key": "session:local:nova:turns", "type": "list", "ttl_ms": 14395000, "value": ["…", …]}

`type` is one of string (value: str), list (list of str), hash (object), set (sorted list of
str), zset (list of [member, score]). `ttl_ms` is the time the key had left when it was read
(null: no expiry); a restore gives it the same time again. Values are the stored bytes as
UTF-8; a byte that is not UTF-8 is kept through `surrogateescape`.

Why not DUMP/RESTORE: its payload is tied to the server's RDB version, so a snapshot from a
newer external Redis or Valkey would not load into the older embedded one. Plain commands load
anywhere, and the file can be read (and grepped for secrets) by the user.

Which keys: everything in Novaberg's Redis database except what `keys.transient` names
(heartbeats, login sessions, run slots, turn markers, summary locks), so a key added later is
backed up without a change here. An external Redis is expected to hold only Novaberg's keys
in its database (use a database number of its own).

Consistency: keys are read in batches by one Lua script each, so every batch is one moment
of the server; the app's writes go on between batches. The SQLite copy is taken first, so a
message in its log has its turn record in the snapshot (the record is written before the log
row, and lives longer).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import redis

from app.memory import keys

BATCH = 500
LOAD_BATCH = 1000
CHUNK = 1000  # list/set elements per command on load

_READ_BATCH = """
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

TYPES = ("string", "list", "hash", "set", "zset")


class SnapshotError(RuntimeError):
    """A snapshot line that cannot be loaded; names the line and what is wrong."""


class Cancelled(Exception):
    """The caller asked the snapshot to stop (the app is shutting down)."""


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _raw(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def connect(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, decode_responses=False, socket_timeout=60)


def backed_up_keys(client: redis.Redis) -> Iterator[str]:
    for raw in client.scan_iter(count=1000):
        key = _text(raw)
        if not keys.transient(key):
            yield key


def _record(key: str, kind: str, ttl: int, value: Any) -> dict[str, Any] | None:
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


def write_snapshot(client: redis.Redis, out: IO[str],
                   should_stop: Callable[[], bool] = lambda: False) -> int:
    """Write every backed-up key to `out`; returns how many were written."""
    script = client.register_script(_READ_BATCH)
    written = 0
    batch: list[str] = []

    def flush() -> int:
        rows = script(keys=batch)
        count = 0
        for key, (kind, ttl, value) in zip(batch, rows):
            record = _record(key, _text(kind), int(ttl), value)
            if record is not None:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
        batch.clear()
        return count

    for key in backed_up_keys(client):
        batch.append(key)
        if len(batch) >= BATCH:
            if should_stop():
                raise Cancelled
            written += flush()
    if batch:
        written += flush()
    return written


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
    if kind == "zset" and not all(isinstance(p, list) and len(p) == 2 for p in value):
        return f"key {record['key']!r}: a zset needs [member, score] pairs"
    return None


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
    """Write the records (replacing keys of the same name); returns how many."""
    pipe = client.pipeline(transaction=False)
    loaded = pending = 0
    for record in records:
        if keys.transient(record["key"]):
            continue
        _write(pipe, record)
        loaded += 1
        pending += 1
        if pending >= LOAD_BATCH:
            pipe.execute()
            pending = 0
    pipe.execute()
    return loaded


def _write(pipe: Any, record: dict[str, Any]) -> None:
    key, kind, value = _raw(record["key"]), record["type"], record["value"]
    pipe.delete(key)
    if kind == "string":
        pipe.set(key, _raw(value))
    elif kind == "hash":
        if value:
            pipe.hset(key, mapping={_raw(k): _raw(v) for k, v in value.items()})
    elif kind == "zset":
        for start in range(0, len(value), CHUNK):
            pipe.zadd(key, {_raw(m): float(s) for m, s in value[start:start + CHUNK]})
    else:
        push = pipe.rpush if kind == "list" else pipe.sadd
        for start in range(0, len(value), CHUNK):
            push(key, *[_raw(v) for v in value[start:start + CHUNK]])
    if record.get("ttl_ms"):
        pipe.pexpire(key, record["ttl_ms"])
