"""Session memory: the working memory of one user–character conversation (seed 000, design §3).

Turns live in a Redis list `session:{user}:{character}:turns`, the summary of older turns in
`session:{user}:{character}:summary`; both expire after `session_ttl` seconds of quiet, and
every write resets both TTLs.

Concurrency, and why each operation is shaped the way it is:

- `store` is one Lua script (RPUSH + both EXPIREs): a reader never sees the turn without its
  TTL reset, and one round trip.
- `mark_action` replaces one list element by compare-and-set: the script finds the element
  by the exact text that was read (wherever a summary or trim has moved it) and replaces
  it, so it can never overwrite the wrong turn; if that very element changed meanwhile
  (another mark), it reads again. A caller that read the session earlier in its run passes
  those turns: the first attempt expects the turn as read there (one round trip instead of
  a read and a write); a stale expectation only fails the compare and reads again.
- `summarize_if_needed`: the summary compaction is its own room, `app.memory.summary`
  (the lock, the model call, the compare-and-trim commit).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from app.core.log import fields
from app.core.settings import Settings
from app.memory import keys
from app.memory.commit import Blind, Write
from app.memory.summary import Summarizer, SummaryGateway
from app.memory.turns import (
    ROLE_USER,
    Turn,
    TurnDecodeError,
    decode_stored,
    decode_turn,
    encode_turn,
)

log = logging.getLogger(__name__)

MARK_ATTEMPTS = 5

# KEYS: turns, summary · ARGV: turn JSON, ttl → new length
_STORE = """
local n = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return n
"""

# KEYS: turns, summary · ARGV: index hint, expected element, new element, ttl
# → 1 replaced, 0 the element is gone or was changed meanwhile. The element is looked up by
# its exact text (at the hint first): other turns coming and going do not disturb a mark.
_MARK = """
local index = tonumber(ARGV[1])
if redis.call('LINDEX', KEYS[1], index) ~= ARGV[2] then
  index = nil
  local items = redis.call('LRANGE', KEYS[1], 0, -1)
  for i = #items, 1, -1 do
    if items[i] == ARGV[2] then index = i - 1; break end
  end
  if index == nil then return 0 end
end
redis.call('LSET', KEYS[1], index, ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""

ActionOutcome = Literal["completed", "error", "follow_up", "refused"]


@dataclass(frozen=True, slots=True)
class ResetReport:
    """What a reset removed besides turns and summary: queued messages and events, raw.

    The caller owns the "no accepted message is silently lost" promise: it reports these
    (e.g. a `turn_failed` naming their message ids) instead of letting them vanish.
    """

    prompt_entries: list[str]
    event_entries: list[str]


class SessionMemory:
    """Store, read, mark, reset and summarize the session of one user–character pair."""

    def __init__(self, redis: aioredis.Redis, settings: Settings) -> None:
        self.redis = redis
        self.settings = settings
        self._store = redis.register_script(_STORE)
        self._mark = redis.register_script(_MARK)
        self._summarizer = Summarizer(redis, settings)

    # --- write ------------------------------------------------------------------------------

    async def store(self, user_id: str, character_id: str, turn: Turn) -> int:
        """Append a complete turn and reset the TTL of turns and summary; the new length."""
        session_keys = _session_keys(user_id, character_id)
        return int(
            await self._store(
                keys=session_keys, args=[encode_turn(turn), self.settings.session_ttl]
            )
        )

    async def mark_action(
        self,
        user_id: str,
        character_id: str,
        turn_id: str,
        success: bool,
        *,
        seen: Sequence[Turn] = (),
    ) -> bool:
        """Mark the user turn `turn_id` as done (and succeeded or failed); False if not found.

        Only a finished agent action is marked: completed → done + success, error → done +
        failed. A follow-up question or a refusal leaves the turn open: do not call this
        (`record_action_outcome` maps an outcome for you). `seen`: the session's turns as
        the caller read them in this run, if it did (the first compare expects that turn).
        """
        session_keys = _session_keys(user_id, character_id)
        known = _find_seen_user_turn(seen, turn_id)
        if known is not None:
            index, turn = known
            marked = msgspec.structs.replace(turn, action_done=True, action_succeeded=success)
            if await self._mark(
                keys=session_keys,
                args=[index, encode_turn(turn), encode_turn(marked), self.settings.session_ttl],
            ):
                return True
        for _ in range(MARK_ATTEMPTS):
            raws = keys.texts(await self.redis.lrange(session_keys[0], 0, -1))
            found = _find_user_turn(raws, turn_id)
            if found is None:
                log.warning(
                    "mark_action found no user turn",
                    extra=fields(pair=keys.pair_id(user_id, character_id), turn_id=turn_id),
                )
                return False
            index, turn = found
            marked = msgspec.structs.replace(turn, action_done=True, action_succeeded=success)
            if await self._mark(
                keys=session_keys,
                args=[index, raws[index], encode_turn(marked), self.settings.session_ttl],
            ):
                return True
        log.warning(
            "mark_action gave up: the session kept changing",
            extra=fields(
                pair=keys.pair_id(user_id, character_id), turn_id=turn_id, attempts=MARK_ATTEMPTS
            ),
        )
        return False

    def store_write(self, user_id: str, character_id: str, turn: Turn) -> Write:
        """`store` as one part of a turn's commit (`app.memory.commit`)."""
        turns_key, summary_key = _session_keys(user_id, character_id)
        ttl = self.settings.session_ttl
        raw = encode_turn(turn)

        def queue(pipe: Pipeline) -> None:
            pipe.rpush(turns_key, raw)
            pipe.expire(turns_key, ttl)
            pipe.expire(summary_key, ttl)

        return Blind(queue)

    def mark_write(
        self, user_id: str, character_id: str, turn_ids: Sequence[str], success: bool
    ) -> Write:
        """`mark_action` for each of `turn_ids` as one part of a turn's commit: the session
        list is read under `WATCH`, so the marks land on the turns as they are then."""
        return _MarkWrite(self, user_id, character_id, tuple(turn_ids), success)

    async def record_action_outcome(
        self,
        user_id: str,
        character_id: str,
        turn_id: str,
        outcome: ActionOutcome,
        *,
        seen: Sequence[Turn] = (),
    ) -> bool:
        """Mark the turn for a finished action; a follow-up question or refusal marks nothing."""
        if outcome == "completed":
            return await self.mark_action(user_id, character_id, turn_id, True, seen=seen)
        if outcome == "error":
            return await self.mark_action(user_id, character_id, turn_id, False, seen=seen)
        return False  # follow_up, refused: the request is still open

    async def reset(self, user_id: str, character_id: str) -> ResetReport:
        """Delete turns, summary, queued messages and events, the parked agent question (its
        context travels in an `awaiting_user` event) and the pair's turn marker, in one atomic
        step. The marker goes with them so that a running turn's commit (guarded by it, see
        `app.memory.commit`) cannot land in the erased session. The character's state stays."""
        prompt_key = keys.prompt_queue(user_id, character_id)
        event_keys = (
            keys.event_queue(user_id, character_id),
            keys.event_processing(user_id, character_id),
        )
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrange(prompt_key, 0, -1)
            for key in event_keys:
                pipe.lrange(key, 0, -1)
            pipe.delete(
                *_session_keys(user_id, character_id),
                prompt_key,
                *event_keys,
                keys.event_awaiting(user_id, character_id),
                keys.turn_marker(user_id, character_id),
            )
            prompts, events, processing, _ = await pipe.execute()
        report = ResetReport(prompt_entries=list(prompts), event_entries=[*processing, *events])
        log.info(
            "session reset",
            extra=fields(
                pair=keys.pair_id(user_id, character_id),
                dropped_messages=len(report.prompt_entries),
                dropped_events=len(report.event_entries),
            ),
        )
        return report

    # --- read -------------------------------------------------------------------------------

    async def retrieve(self, user_id: str, character_id: str) -> tuple[list[Turn], str | None]:
        """All turns (oldest first) and the summary, read in one consistent snapshot.

        A record that cannot be read at all is left out with an error log line naming its
        position; everything else loads leniently (see `app.memory.turns`).
        """
        async with self.redis.pipeline(transaction=True) as pipe:
            retrieved = self.queue_retrieve(pipe, user_id, character_id)
            return retrieved(await pipe.execute())

    def queue_retrieve(
        self, pipe: Pipeline, user_id: str, character_id: str
    ) -> Callable[[list[Any]], tuple[list[Turn], str | None]]:
        """`retrieve`'s reads queued on a transaction pipeline the caller executes, so that
        more of the pair is read in the same snapshot and round trip; the returned function
        picks turns and summary out of the pipeline's results."""
        start = len(pipe)
        turns_key, summary_key = _session_keys(user_id, character_id)
        pipe.lrange(turns_key, 0, -1)
        pipe.get(summary_key)
        pair = keys.pair_id(user_id, character_id)

        def retrieved(results: list[Any]) -> tuple[list[Turn], str | None]:
            raws, summary = results[start : start + 2]
            return decode_stored(raws, pair), summary

        return retrieved

    async def length(self, user_id: str, character_id: str) -> int:
        return int(await self.redis.llen(keys.session_turns(user_id, character_id)))

    # --- summary ----------------------------------------------------------------------------

    async def summarize_if_needed(
        self,
        user_id: str,
        character_id: str,
        gateway: SummaryGateway,
        *,
        character_name: str | None = None,
        language: str = "de",
    ) -> bool:
        """`app.memory.summary.Summarizer.summarize_if_needed` for this pair."""
        return await self._summarizer.summarize_if_needed(
            user_id, character_id, gateway, character_name=character_name, language=language
        )


class _MarkWrite:
    def __init__(
        self,
        memory: SessionMemory,
        user_id: str,
        character_id: str,
        turn_ids: tuple[str, ...],
        success: bool,
    ) -> None:
        self.keys = _session_keys(user_id, character_id)
        self.watch = (self.keys[0],)
        self.ttl = memory.settings.session_ttl
        self.pair = keys.pair_id(user_id, character_id)
        self.turn_ids = turn_ids
        self.success = success
        self.marks: list[tuple[int, bytes]] = []

    async def read(self, pipe: Pipeline) -> None:
        raws = keys.texts(await pipe.lrange(self.keys[0], 0, -1))
        self.marks = []
        for turn_id in self.turn_ids:
            found = _find_user_turn(raws, turn_id)
            if found is None:
                log.warning(
                    "mark_action found no user turn", extra=fields(pair=self.pair, turn_id=turn_id)
                )
                continue
            index, turn = found
            marked = msgspec.structs.replace(turn, action_done=True, action_succeeded=self.success)
            self.marks.append((index, encode_turn(marked)))

    def queue(self, pipe: Pipeline) -> None:
        for index, raw in self.marks:
            pipe.lset(self.keys[0], index, raw)  # type: ignore[arg-type]  # redis-py types lset's value str; it sends bytes as every command does
        if self.marks:
            pipe.expire(self.keys[0], self.ttl)
            pipe.expire(self.keys[1], self.ttl)


def _session_keys(user_id: str, character_id: str) -> list[str]:
    return [keys.session_turns(user_id, character_id), keys.session_summary(user_id, character_id)]


def _find_seen_user_turn(turns: Sequence[Turn], turn_id: str) -> tuple[int, Turn] | None:
    """The newest user turn with this `turn_id` among turns read earlier, and its index
    there (only a hint for the compare-and-set script, which looks the text up itself)."""
    for index in range(len(turns) - 1, -1, -1):
        turn = turns[index]
        if turn.turn_id == turn_id and turn.role == ROLE_USER:
            return index, turn
    return None


def _find_user_turn(raws: Sequence[str], turn_id: str) -> tuple[int, Turn] | None:
    """The newest user turn with this `turn_id` and its list index."""
    for index in range(len(raws) - 1, -1, -1):
        try:
            turn = decode_turn(raws[index])
        except TurnDecodeError:
            continue
        if turn.turn_id == turn_id and turn.role == ROLE_USER:
            return index, turn
    return None
