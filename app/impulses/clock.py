"""Own impulses: the reminder clock and idle reflection (design §5, §6; seed 001 §3.1.1).

One background task per process. It sleeps until the earliest due reminder (at most
`reminder_poll_seconds`, so reminders added by another process are seen too; a reminder
added in this process wakes it at once), claims what is due, and turns each reminder into
an impulse event through the runtime (`Runtime.submit_impulse`): a new turn whose payload
carries the thought in `eigener_gedanke`, `reiz_herkunft = eigener_impuls`,
`gedanke_arousal` (None: a reminder has no measured level) and `ausloeser_turn_id` (the turn
the reminder was asked for in, None when it came through the API), and no `user_prompt`.
The answer is delivered with origin `own_impulse` and stored with `herkunft =
eigener_impuls`.

Reminders live in Redis, so the clock survives restarts: what fell due while the app was
down fires at the next start, and a claim that was never delivered is put back after
`reminder_claim_timeout`.

Idle reflection (off by default: `idle_reflection_minutes` = 0): when a pair's user has been
quiet that long, the character thinks back once per quiet period (an impulse like a
reminder's, with no trigger turn). With a long-term memory to come back to (design §3a) — a
plan told on an earlier day ("Morgen hab ich das Vorstellungsgespräch"), an open feeling —
the thought is about it ("…, wie ist es gelaufen?"), and that memory is marked so it is
brought up once; otherwise, while the session still holds turns, it is about the last
conversation. The same task looks for it at most once a minute.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from app.characters.book import CharacterBook
from app.core import log as logctx
from app.core.background import RETRY_AFTER_FAILURE_SECONDS, Ticker
from app.core.clock import calendar_date, zone_named
from app.core.i18n import FALLBACK_LANGUAGE, texts
from app.core.log import fields
from app.core.settings import Settings
from app.memory import keys
from app.memory.long_term import LongTermMemory, Memory
from app.memory.reminders import Reminder, ReminderStore
from app.memory.state import load_state

log = logging.getLogger(__name__)

DUE_BATCH = 50
REFLECTION_SCAN_SECONDS = 60.0

Submit = Callable[..., Awaitable[str]]  # Runtime.submit_impulse


class ReminderClock:
    def __init__(
        self,
        store: ReminderStore,
        settings: Settings,
        characters: CharacterBook,
        submit: Submit,
        long_term: LongTermMemory | None = None,
    ) -> None:
        self.store = store
        self.long_term = long_term
        self.settings = settings
        self.characters = characters
        self.submit = submit
        # Each round sleeps as long as tick() says: until the next due reminder, at most the poll.
        self.ticker: Ticker[float] = Ticker(
            "reminder-clock",
            self.tick,
            interval=lambda delay: delay,
            error_delay=RETRY_AFTER_FAILURE_SECONDS,
            logger=log,
        )
        self._next_scan = 0.0
        self.fired = 0
        self.reflected = 0

    def wake(self) -> None:
        """A reminder was added: look at the due index again now."""
        self.ticker.wake()

    async def start(self) -> None:
        await self.ticker.start()

    async def stop(self) -> None:
        await self.ticker.stop()

    async def tick(self) -> float:
        """Fire what is due; returns how long to sleep until the next look."""
        now = time.time()
        restored = await self.store.put_back_stale(now - self.settings.reminder_claim_timeout)
        if restored:
            log.warning(
                "undelivered reminder claims put back",
                extra=fields(
                    members=restored,
                    limit="reminder_claim_timeout",
                    seconds=self.settings.reminder_claim_timeout,
                ),
            )
        for member in await self.store.due_members(now, DUE_BATCH):
            reminder = await self.store.claim(member, now)
            if reminder is not None:
                await self.fire(reminder)
        if self.settings.idle_reflection_minutes > 0 and now >= self._next_scan:
            self._next_scan = now + REFLECTION_SCAN_SECONDS
            await self.reflect_when_idle(now)
        poll = self.settings.reminder_poll_seconds
        next_due = await self.store.next_due()
        if next_due is None:
            return poll
        return min(max(next_due - time.time(), 0.0), poll)

    async def fire(self, reminder: Reminder) -> str:
        pair = keys.pair_id(reminder.user_id, reminder.character_id)
        token = logctx.pair.set(pair)
        try:
            turn_id = await self.submit(
                reminder.user_id,
                reminder.character_id,
                self.thought(reminder),
                arousal=None,
                trigger_turn_id=reminder.trigger_turn_id,
            )
            await self.store.mark_fired(reminder, turn_id)
            self.fired += 1
            log.info(
                "reminder fired as an own impulse",
                extra=fields(
                    reminder_id=reminder.id,
                    turn_id=turn_id,
                    pair=pair,
                    late_s=round(time.time() - reminder.due_at, 3),
                ),
            )
            return turn_id
        finally:
            logctx.pair.reset(token)

    def thought(self, reminder: Reminder) -> str:
        definition = self.characters.get(reminder.user_id, reminder.character_id)
        # The thought is the character's own, in its language.
        language = definition.language if definition is not None else FALLBACK_LANGUAGE
        return texts("impulses", language)["reminder_due"].format(text=reminder.text)

    async def reflect_when_idle(self, now: float) -> int:
        """One reflection impulse per quiet period of every pair quiet long enough."""
        redis = self.store.redis
        quiet = self.settings.idle_reflection_minutes * 60
        started = 0
        for pair in sorted(keys.texts(await redis.smembers(keys.known_pairs()))):
            user_id, character_id = keys.split_pair(pair)
            definition = self.characters.get(user_id, character_id)
            state = await load_state(redis, user_id, character_id)
            since = state.user_time
            if definition is None or since is None or now - since < quiet:
                continue
            language = definition.language
            memory = await self.memory_to_reflect_on(user_id, character_id, since, now)
            if memory is None and not await redis.exists(keys.session_turns(user_id, character_id)):
                continue  # nothing left to think back on
            marker = keys.idle_reflection(user_id, character_id)
            if await redis.getset(marker, repr(since)) == repr(since):
                continue  # this quiet period had its reflection
            await redis.expire(marker, self.settings.session_ttl)
            if memory is not None and self.long_term is not None:
                # Coming back to a long-term memory, by its kind.
                thought = texts("reflect_on", language)[memory.kind].format(text=memory.text)
                await self.long_term.mark_reflected(memory.memory_id, now)
            else:
                thought = texts("impulses", language)["reflection"]
            turn_id = await self.submit(
                user_id, character_id, thought, arousal=None, trigger_turn_id=None
            )
            started += 1
            self.reflected += 1
            log.info(
                "idle reflection as an own impulse",
                extra=fields(
                    pair=pair,
                    turn_id=turn_id,
                    quiet_s=round(now - since, 3),
                    setting="idle_reflection_minutes",
                    memory_id=memory.memory_id if memory is not None else None,
                ),
            )
        return started

    async def memory_to_reflect_on(
        self, user_id: str, character_id: str, since: float, now: float
    ) -> Memory | None:
        """A plan or feeling told before the quiet period began and not yet brought up; a
        plan only from an earlier calendar day (it is about "tomorrow")."""
        if self.long_term is None:
            return None
        zone = zone_named(self.settings.timezone)
        today = calendar_date(now, zone)
        for memory in await self.long_term.to_reflect_on(
            user_id, character_id, before=since + 1e-6
        ):
            if memory.kind != "plan" or calendar_date(memory.created_at, zone) < today:
                return memory
        return None
