"""The session summary (seed 000 §3.3): the prompt that folds the oldest turns into it, and
the compaction that runs it (`Summarizer`, reached through `SessionMemory`).

The turns reach the model through the one history renderer (`whole=True`: the summarizer
must see every turn it folds away, so neither window nor budget applies), so impulses and
turns of unknown occasion carry their labels in the speaker line — the summary outlives the
history and is later read as fact, so it must not turn an impulse into an answer.

The instructions are a text template shipped as package data
(`app/memory/prompts/summary.txt`); a file `prompts/summary.txt` in the data dir replaces it.

Concurrency: `summarize_if_needed` holds a per-pair lock key (`SET NX` with a TTL, released
only by its owner) so one summary runs at a time per pair, across processes. The model call
runs outside any Redis transaction; the commit is one Lua script that checks the oldest turns
are still exactly the ones summarized, then `LTRIM`s exactly that many from the left and
stores the summary. Turns stored meanwhile are at the right end and are neither lost nor
reordered; a reset meanwhile makes the commit a no-op (no summary of an erased session).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

import redis.asyncio as aioredis

from app.core.log import fields
from app.core.prompt_templates import read_template
from app.core.settings import Settings
from app.llm.errors import ModelError
from app.memory import keys
from app.memory.commit import DELETE_IF_OWNER
from app.memory.render import labels_for, render_history
from app.memory.turns import Turn, decode_stored

log = logging.getLogger(__name__)

PURPOSE = "summary"
TEMPLATE = "summary.txt"
LOCK_GRACE_SECONDS = 30  # the summary lock outlives the longest model call by this much

# KEYS: turns, summary · ARGV: ttl, summary, the expected oldest elements… → 1 done, 0 changed
_COMMIT_SUMMARY = """
local n = #ARGV - 2
local head = redis.call('LRANGE', KEYS[1], 0, n - 1)
if #head ~= n then return 0 end
for i = 1, n do
  if head[i] ~= ARGV[i + 2] then return 0 end
end
redis.call('LTRIM', KEYS[1], n, -1)
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""

# KEYS: turns, summary · ARGV: turns to keep, ttl → turns removed
_TRIM = """
local before = redis.call('LLEN', KEYS[1])
local keep = tonumber(ARGV[1])
if before <= keep then return 0 end
redis.call('LTRIM', KEYS[1], -keep, -1)
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return before - keep
"""


class SummaryGateway(Protocol):
    """What the summary needs of the model gateway (`app.llm`)."""

    async def complete(
        self,
        purpose: str,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int,
        user_id: str | None = None,
    ) -> Any: ...


def load_template(settings: Settings) -> str:
    """The data dir's `prompts/summary.txt` if present, else the shipped one."""
    return read_template(settings, "app.memory", TEMPLATE)


def summary_messages(
    previous: str | None,
    turns: Sequence[Turn],
    settings: Settings,
    *,
    character_name: str,
    language: str,
) -> list[dict[str, Any]]:
    """System instructions + one user message holding the previous summary and the turns."""
    labels = labels_for(language)
    name = character_name.upper()
    instructions = load_template(settings).format(
        name=name,
        impulse_label=f"{name} ({labels.impulse})",
        unknown_label=f"{name} ({labels.unknown})",
        done=labels.done,
        failed=labels.failed,
    )
    history = render_history(
        turns, settings, character_name=character_name, language=language, whole=True
    )
    excerpt = f"Conversation excerpt:\n{history}"
    body = f"Previous summary:\n{previous.strip()}\n\n{excerpt}" if previous else excerpt
    return [{"role": "system", "content": instructions.strip()}, {"role": "user", "content": body}]


class Summarizer:
    """Folds a pair's oldest turns into its summary, one run at a time per pair."""

    def __init__(self, redis: aioredis.Redis, settings: Settings) -> None:
        self.redis = redis
        self.settings = settings
        self._commit_summary = redis.register_script(_COMMIT_SUMMARY)
        self._trim = redis.register_script(_TRIM)
        self._release = redis.register_script(DELETE_IF_OWNER)

    async def summarize_if_needed(
        self,
        user_id: str,
        character_id: str,
        gateway: SummaryGateway,
        *,
        character_name: str | None = None,
        language: str = "de",
    ) -> bool:
        """Above `session_summarize_at` turns, fold the oldest `session_summarize_batch` turns
        and the previous summary into a new summary and remove exactly those turns.

        On a model failure (or an empty answer) the list is trimmed to `session_max_turns`
        instead. Runs one at a time per pair; a call while another runs returns at once.
        True when a new summary was stored.
        """
        settings = self.settings
        pair = keys.pair_id(user_id, character_id)
        if (
            await self.redis.llen(keys.session_turns(user_id, character_id))
            <= settings.session_summarize_at
        ):
            return False
        lock_key = keys.session_summary_lock(user_id, character_id)
        token = uuid.uuid4().hex
        if not await self.redis.set(lock_key, token, nx=True, ex=self._lock_ttl()):
            log.info("session summary already running", extra=fields(pair=pair))
            return False
        try:
            return await self._summarize_locked(
                user_id,
                character_id,
                gateway,
                character_name=character_name or character_id.capitalize(),
                language=language,
            )
        finally:
            await self._release(keys=[lock_key], args=[token])

    async def _summarize_locked(
        self,
        user_id: str,
        character_id: str,
        gateway: SummaryGateway,
        *,
        character_name: str,
        language: str,
    ) -> bool:
        settings = self.settings
        pair = keys.pair_id(user_id, character_id)
        session_keys = [
            keys.session_turns(user_id, character_id),
            keys.session_summary(user_id, character_id),
        ]
        batch = settings.session_summarize_batch
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.llen(session_keys[0])
            pipe.lrange(session_keys[0], 0, batch - 1)
            pipe.get(session_keys[1])
            length, head, previous = await pipe.execute()
        if length <= settings.session_summarize_at:  # another summary finished just before
            return False
        messages = summary_messages(
            previous,
            decode_stored(head, pair),
            settings,
            character_name=character_name,
            language=language,
        )
        try:
            result = await gateway.complete(
                PURPOSE, messages, max_tokens=settings.session_summary_max_tokens, user_id=user_id
            )
            summary = result.text.strip()
            if not summary:
                raise ModelError("model_bad_output", "the summary came back empty")
        except ModelError as exc:
            removed = await self._trim(
                keys=session_keys, args=[settings.session_max_turns, settings.session_ttl]
            )
            log.warning(
                "session summary failed; session_max_turns trimmed the session",
                extra=fields(
                    pair=pair,
                    limit="session_max_turns",
                    keep=settings.session_max_turns,
                    removed=removed,
                    code=exc.code,
                ),
            )
            return False
        if not await self._commit_summary(
            keys=session_keys, args=[settings.session_ttl, summary, *head]
        ):
            log.warning(
                "session changed while summarizing (reset or marked); summary discarded",
                extra=fields(pair=pair),
            )
            return False
        log.info(
            "session summarized",
            extra=fields(
                pair=pair,
                folded_turns=len(head),
                kept_turns=length - len(head),
                summary_chars=len(summary),
            ),
        )
        return True

    def _lock_ttl(self) -> int:
        """Long enough for the slowest model call the gateway allows, with its retries."""
        settings = self.settings
        worst = settings.model_timeout * (settings.model_retries + 1)
        return math.ceil(worst) + LOCK_GRACE_SECONDS
