"""Recovery after a crash (design §5 Lifecycle; issue 5 item 7).

Runs at start-up before any consumer (and, with an external Redis, periodically for turns
whose owning process has lost its heartbeat):

0. what committed runs left undone is finished (the pipelines' `finish_writes`: the
   message-log rows their commits promised are appended, once);
1. every open turn found in ``path1``/``path2`` goes back to ``queued`` (trigger ``requeue``,
   same ``turn_id``, attempts + 1) and runs again — at most ``max_turn_attempts`` runs in all;
   beyond that it fails with ``turn_failed`` (reason ``crashed``). The requeue clears the old
   owner's marker in the same atomic step, and the added attempt fences the old run: an owner
   that was only declared dead (its heartbeat lapsed under load) and finishes later has its
   commit refused by the guard (marker gone) and its transitions by the attempts
   (`records.StateMoved.fenced`); it leaves the turn's events for this pass to put back.
   A turn out of attempts whose owner has no heartbeat but whose marker is still the
   owner's (in a periodic pass, `only_dead_owners`) is left to that owner: a process only
   declared dead (its heartbeat lapsed under load) keeps refreshing its marker and ends
   the turn itself, answered; a crashed one's marker runs out (`turn_marker_ttl`, the
   emergency brake) and a later pass fails the turn `crashed`. So a turn falsely declared
   dead twice is not failed while it can still be answered, and one that crashes its
   process every time still stops (it fails up to `turn_marker_ttl` later);
2. a user turn whose path 1 has not finished reruns path 1 from its message records (its
   block had already left the prompt queue);
3. events taken but not acknowledged go back to the front of their queue, in order;
4. a stale marker is cleared (or handed to the turn that reruns path 1);
5. every pair with queued input is woken — in a periodic pass (`only_dead_owners`) a pair
   this pass took nothing over for only if no consumer of this process works on it: under
   load hundreds of pairs wait for a run slot with a consumer each, and a pass after every
   false death woke them all again (and reported them as woken);
6. promotion triggers a dead process's Pixie worker had taken but not consolidated go back
   to the front of their Pixie queue.

With the embedded Redis one process owns the data dir (the data-dir lock), so every owner
but this process is dead. With an external Redis only owners without a heartbeat are.

`Recovery` holds the pieces it works with (the records, the pair lock, the consumer, the turns'
failure path), handed in by the runtime that owns them (`Runtime.recover`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import redis.asyncio as aioredis

from app.core.log import fields
from app.core.settings import Settings
from app.memory import keys
from app.memory.pixie_queue import PixieQueue
from app.runtime.events import EventQueue
from app.runtime.keeper import heartbeat_gone
from app.runtime.markers import marker_value, parse_marker
from app.runtime.records import Records, StateMoved, TurnRecord
from statemachine import QUEUED, RUNNING_STATES, IllegalTransition

if TYPE_CHECKING:
    from app.runtime.consumer import PairConsumer
    from app.runtime.markers import PairLocks

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RecoveryReport:
    finished_writes: int = 0
    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    resumed_path1: list[str] = field(default_factory=list)
    restored_events: int = 0
    restored_triggers: int = 0
    cleared_markers: int = 0
    woken_pairs: int = 0
    left_to_owner: list[str] = field(default_factory=list)  # out of attempts, marker held


FailTurn = Callable[[TurnRecord, str], Awaitable[bool]]  # False: the turn had ended already


@dataclass(frozen=True, slots=True)
class Recovery:
    """The pieces recovery works with; `Runtime` builds it over its own."""

    redis: aioredis.Redis
    settings: Settings
    instance_id: str
    records: Records
    locks: PairLocks
    consumer: PairConsumer
    fail_turn: FailTurn
    finish_writes: Callable[[], Awaitable[int]]

    async def run(self, *, only_dead_owners: bool) -> RecoveryReport:
        """One pass over what a dead process left; `only_dead_owners`: leave the turns and
        markers of processes with a heartbeat alone (an external Redis)."""
        report = RecoveryReport()
        redis = self.redis
        dead_cache: dict[str, bool] = {}
        # 0: before any turn reruns, so a rerun that finds its turn stored finds its row too.
        report.finished_writes = await self.finish_writes()

        async def owner_dead(owner: str) -> bool:
            if owner == self.instance_id:
                return False
            if not only_dead_owners:
                return True
            if owner not in dead_cache:
                dead_cache[owner] = await heartbeat_gone(redis, owner)
            return dead_cache[owner]

        # 1–2: open turns.
        open_ids = sorted(keys.texts(await redis.smembers(keys.open_turns())))
        orphan_pairs: set[str] = set()
        owners_pairs: set[str] = set()  # left to an owner that may be alive: hands off
        for record in await self.records.turns(open_ids):
            if record.terminal:
                await self._forget_open(record)
                continue
            if not await owner_dead(record.owner):
                continue
            if only_dead_owners and await self._left_to_owner(record, report):
                owners_pairs.add(record.pair)
                continue
            orphan_pairs.add(record.pair)
            await self._recover_turn(record, report)

        # 3–5: queues and markers of every pair nobody alive is working on.
        for pair in sorted(keys.texts(await redis.smembers(keys.known_pairs()))):
            user_id, character_id = keys.split_pair(pair)
            # The per-user index of pairs (a reconnect's snapshot) for pairs from before it.
            await redis.sadd(keys.user_pairs(user_id), character_id)
            if pair in owners_pairs:
                continue  # its marker, its taken events and its queue are the owner's
            marker = await redis.get(keys.turn_marker(user_id, character_id))
            marker = None if marker is None else keys.text(marker)
            if marker is not None:
                owner, _ = parse_marker(marker)
                if not await owner_dead(owner):
                    continue
                await self.locks.release_foreign(pair, marker)
                report.cleared_markers += 1
            elif (
                only_dead_owners
                and pair not in orphan_pairs
                # A live process may be between two steps of this pair; leave its lists alone.
                and await redis.llen(keys.event_processing(user_id, character_id))
            ):
                continue
            restored = await EventQueue(redis, user_id, character_id).restore()
            report.restored_events += restored
            taken_over = pair in orphan_pairs or marker is not None or restored > 0
            resume = self.consumer.resuming(pair)
            if resume is not None and not await self.locks.take(
                pair, self.locks.marker_for(resume)
            ):
                self.consumer.forget_resume(pair)  # someone else holds the pair now
            async with redis.pipeline(transaction=False) as pipe:
                pipe.llen(keys.prompt_queue(user_id, character_id))
                pipe.llen(keys.event_queue(user_id, character_id))
                queued, events = await pipe.execute()
            if only_dead_owners and not taken_over and self.consumer.running(pair):
                continue  # its consumer here waits for a slot or loops back by itself
            if queued or events or self.consumer.resuming(pair) is not None:
                self.consumer.notify(pair)
                report.woken_pairs += 1

        # 6: promotion triggers taken but not consolidated.
        for pair in sorted(keys.texts(await redis.smembers(keys.pixie_pairs()))):
            report.restored_triggers += await PixieQueue(redis, *keys.split_pair(pair)).restore(
                owner_dead
            )

        if any(
            (
                report.finished_writes,
                report.requeued,
                report.failed,
                report.resumed_path1,
                report.restored_events,
                report.cleared_markers,
                report.restored_triggers,
            )
        ):
            log.warning(
                "recovered after a crash",
                extra=fields(
                    finished_writes=report.finished_writes,
                    requeued=report.requeued,
                    failed=report.failed,
                    resumed_path1=report.resumed_path1,
                    restored_events=report.restored_events,
                    cleared_markers=report.cleared_markers,
                    woken_pairs=report.woken_pairs,
                    restored_triggers=report.restored_triggers,
                ),
            )
        return report

    async def _left_to_owner(self, record: TurnRecord, report: RecoveryReport) -> bool:
        """A running turn out of attempts whose pair marker is still its owner's: the owner
        may only have been declared dead, and refreshes the marker while it runs the turn.
        It is left alone until the marker is gone (True)."""
        if record.state not in RUNNING_STATES:
            return False
        if record.machine(self.settings.max_turn_attempts).has_attempts_left():
            return False
        marker = await self.redis.get(keys.turn_marker(record.user_id, record.character_id))
        if marker != marker_value(record.owner, record.turn_id):
            return False
        log.warning(
            "turn out of attempts left to its owner while its marker holds",
            extra=fields(
                turn_id=record.turn_id,
                pair=record.pair,
                owner=record.owner,
                attempts=record.attempts,
                limit=self.settings.max_turn_attempts,
                setting="turn_marker_ttl",
            ),
        )
        report.left_to_owner.append(record.turn_id)
        return True

    async def _recover_turn(self, record: TurnRecord, report: RecoveryReport) -> None:
        if record.state in RUNNING_STATES:
            machine = record.machine(self.settings.max_turn_attempts)
            if not machine.has_attempts_left():
                log.warning(
                    "crashed turn out of attempts",
                    extra=fields(
                        turn_id=record.turn_id,
                        pair=record.pair,
                        attempts=record.attempts,
                        limit=self.settings.max_turn_attempts,
                        setting="max_turn_attempts",
                    ),
                )
                if await self.fail_turn(record, "crashed"):
                    report.failed.append(record.turn_id)
                return
            try:
                # The old owner's marker goes with the requeue, atomically: its commit can
                # no longer land once the turn is queued for a rerun.
                await self.records.transition(
                    record,
                    machine,
                    "requeue",
                    release_marker=marker_value(record.owner, record.turn_id),
                )
            except (StateMoved, IllegalTransition) as exc:
                log.warning(
                    "turn moved during recovery",
                    extra=fields(turn_id=record.turn_id, error=str(exc)),
                )
                return
            report.requeued.append(record.turn_id)
        if record.state == QUEUED and record.initiator == "user" and not record.perceived:
            self.consumer.resume(record.pair, record.turn_id)
            report.resumed_path1.append(record.turn_id)

    async def _forget_open(self, record: TurnRecord) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.srem(keys.open_turns(), record.turn_id)
            pipe.srem(keys.user_open_turns(record.user_id), record.turn_id)
            await pipe.execute()
