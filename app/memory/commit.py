"""One turn's writes as one Redis transaction that a session reset cannot interleave.

The dispatcher (the one writer) hands `commit` the writes of a finished run — the session
turn, short-term memory entries, the character's state, the action mark, the changes its
agents intended (list edits, reminders). They land together or not at all:

- `TurnGuard` names what must still hold when the turn writes: its lifecycle record exists
  and has not ended (a reset or a recovery fails it), and the pair's turn marker still holds
  this turn's value. A session reset deletes the marker in the same atomic step as the
  session, so a write either lands before the reset (and the reset erases it) or sees the
  marker gone and writes nothing.
- The guard's keys, and every key a write reads to compute itself (the session list for the
  action mark, a list for its edit), are `WATCH`ed; the writes go out in one `MULTI`/`EXEC`.
  If any watched key changes in between, the transaction is dropped by Redis and computed
  again from what is there now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.exceptions import WatchError

log = logging.getLogger(__name__)

ATTEMPTS = 10

# A key held by an owner token (a lock, a turn marker) is deleted only by its owner.
# KEYS: the key · ARGV: owner token → 1 deleted, 0 not ours (expired and taken over)
DELETE_IF_OWNER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass(frozen=True, slots=True)
class TurnGuard:
    """The turn may write while its record is open and the pair's marker is its own."""

    record_key: str
    marker_key: str
    marker: str
    ended_states: tuple[str, ...] = ("failed",)


class Write(Protocol):
    """One part of a turn's commit.

    `watch`: keys the write reads to compute itself. `read(pipe)`: those reads, on the
    watching pipeline (immediate mode). `queue(pipe)`: the writes, queued inside `MULTI`;
    it may return a callback that gets this write's slice of the `EXEC` results.
    """

    @property
    def watch(self) -> tuple[str, ...]: ...  # read-only: a frozen write's field fits

    async def read(self, pipe: Pipeline) -> None: ...

    def queue(self, pipe: Pipeline) -> Callable[[list[Any]], None] | None: ...


# A write's share of a pipeline's results: its commands' slice `start:end`, and who reads it.
Picker = tuple[int, int, Callable[[list[Any]], None]]


class GuardFailed(Exception):
    """The turn ended (or lost its marker) before its writes landed; nothing was written."""


async def commit(redis: aioredis.Redis, guard: TurnGuard | None, writes: Sequence[Write]) -> None:
    """Apply `writes` atomically under `guard` (None: no guard, for a context without a
    running turn). Raises `GuardFailed` when the guard no longer holds."""
    if not writes:
        return
    if guard is not None and all(isinstance(write, Blind) for write in writes):
        await _commit_blind(redis, guard, writes)  # the common case: one round trip
        return
    watch = [key for write in writes for key in write.watch]
    if guard is not None:
        watch = [guard.record_key, guard.marker_key, *watch]
    for _ in range(ATTEMPTS):
        async with redis.pipeline(transaction=True) as pipe:
            try:
                if watch:
                    await pipe.watch(*dict.fromkeys(watch))
                if guard is not None:
                    await _check(pipe, guard)
                for write in writes:
                    await write.read(pipe)
                pipe.multi()
                pickers = _queue_all(pipe, writes)
                results = await pipe.execute()
            except WatchError:
                continue
        for start, end, picker in pickers:
            picker(results[start:end])
        return
    raise RuntimeError(f"turn commit kept being interrupted; gave up after {ATTEMPTS} attempts")


# KEYS: turn record, pair marker → {state, marker} (false where absent): both in one round trip
_READ_GUARD = """
return {redis.call('HGET', KEYS[1], 'state'), redis.call('GET', KEYS[2])}
"""


# KEYS: turn record, pair marker · ARGV: marker, ended states count, ended states…, command
# count, then per command its argument count and arguments → {1, results…} written, or
# {0, state, marker} when the guard does not hold (nothing written).
_GUARDED_BATCH = """
local state = redis.call('HGET', KEYS[1], 'state')
local marker = redis.call('GET', KEYS[2])
local i = 2
local ended = false
for _ = 1, tonumber(ARGV[i]) do
  i = i + 1
  if state == ARGV[i] then ended = true end
end
if not state or ended or marker ~= ARGV[1] then return {0, state, marker} end
i = i + 1
local results = {1}
for _ = 1, tonumber(ARGV[i]) do
  i = i + 1
  local count = tonumber(ARGV[i])
  local command = {}
  for j = 1, count do command[j] = ARGV[i + j] end
  i = i + count
  results[#results + 1] = redis.call(unpack(command))
end
return results
"""


async def _commit_blind(redis: aioredis.Redis, guard: TurnGuard, writes: Sequence[Write]) -> None:
    """Writes that read nothing: the guard's check and the writes in one Lua call (atomic,
    like the transaction, and one round trip instead of three)."""
    recorder = redis.pipeline(transaction=False)  # only records commands; never executed
    pickers = _queue_all(recorder, writes)
    args: list[Any] = [
        guard.marker,
        len(guard.ended_states),
        *guard.ended_states,
        len(recorder.command_stack),
    ]
    for command_args, _options in recorder.command_stack:
        args += [len(command_args), *command_args]
    await recorder.reset()
    # EVALSHA: the script's text (over a kilobyte) is not sent, nor hashed by the server,
    # with every turn.
    answer = await redis.register_script(_GUARDED_BATCH)(
        keys=[guard.record_key, guard.marker_key], args=args
    )
    if answer[0] != 1:
        raise GuardFailed(f"the turn has ended or lost its marker (state {answer[1]!r})")
    results = answer[1:]
    for start, end, picker in pickers:
        picker(results[start:end])


def _queue_all(pipe: Pipeline, writes: Sequence[Write]) -> list[Picker]:
    """Queue every write's commands on `pipe`; each picker gets its own commands' results
    (the slice `start:end` of the pipeline's results)."""
    pickers = []
    for write in writes:
        start = len(pipe)
        picker = write.queue(pipe)
        if picker is not None:
            pickers.append((start, len(pipe), picker))
    return pickers


async def _check(pipe: Pipeline, guard: TurnGuard) -> None:
    state, marker = await pipe.eval(_READ_GUARD, 2, guard.record_key, guard.marker_key)
    if state is None or state in guard.ended_states:
        raise GuardFailed(f"the turn has ended (state {state!r})")
    if marker != guard.marker:
        raise GuardFailed(
            "the pair's turn marker is no longer this turn's "
            "(a session reset, or the marker expired)"
        )


@dataclass(frozen=True, slots=True)
class Blind:
    """A write that reads nothing: its commands, queued as they are."""

    queue_commands: Callable[[Pipeline], Callable[[list[Any]], None] | None]
    watch: tuple[str, ...] = ()

    async def read(self, pipe: Pipeline) -> None:
        return None

    def queue(self, pipe: Pipeline) -> Callable[[list[Any]], None] | None:
        return self.queue_commands(pipe)
