"""A turn's commit (app.memory.commit) against a real embedded Redis: everything lands in
one transaction, and a session reset or a failed turn in the middle of it leaves nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from app.core.settings import Settings, defaults
from app.memory import keys
from app.memory.commit import GuardFailed, TurnGuard, commit
from app.memory.session import SessionMemory
from app.memory.state import CharacterState, load_state, save_state_write
from app.memory.turns import Turn

U, C = "local", "nova"
MARKER = "instance-1:t2"


@pytest.fixture
def settings() -> Settings:
    return defaults()


@pytest.fixture
async def running(redis_client: aioredis.Redis) -> TurnGuard:
    """Turn t2 runs: its record is open and it holds the pair's marker."""
    await redis_client.hset(keys.turn_record("t2"), mapping={"state": "path2"})
    await redis_client.set(keys.turn_marker(U, C), MARKER)
    return TurnGuard(record_key=keys.turn_record("t2"), marker_key=keys.turn_marker(U, C),
                     marker=MARKER)


@dataclass
class Meanwhile:
    """A write that lets something else happen between the guard's check and `EXEC` —
    exactly the window an `alive()`-then-write leaves open."""

    action: Any
    watch: tuple[str, ...] = ()
    ran: list[int] = field(default_factory=list)

    async def read(self, pipe: Pipeline) -> None:
        if not self.ran:
            self.ran.append(1)
            await self.action()

    def queue(self, pipe: Pipeline) -> None:
        return None


def turn(turn_id: str, role: str, text: str) -> Turn:
    return Turn(turn_id, role, text, 1700000000.0)  # type: ignore[arg-type]


def turn_writes(memory: SessionMemory) -> list[Any]:
    return [memory.store_write(U, C, turn("t2", "assistant", "Antwort")),
            save_state_write(U, C, CharacterState(emotion="froh", arousal=0.7)),
            memory.mark_write(U, C, ["t2"], success=True)]


async def test_the_turn_state_and_mark_land_together(redis_client, settings, running) -> None:
    memory = SessionMemory(redis_client, settings)
    await memory.store(U, C, turn("t2", "user", "Setz Milch auf die Liste"))

    await commit(redis_client, running, turn_writes(memory))

    turns, _ = await memory.retrieve(U, C)
    assert [(t.role, t.content, t.action_done) for t in turns] == [
        ("user", "Setz Milch auf die Liste", True), ("assistant", "Antwort", None)]
    assert (await load_state(redis_client, U, C)).emotion == "froh"


async def test_a_reset_between_check_and_write_leaves_nothing_behind(
        redis_client, settings, running) -> None:
    memory = SessionMemory(redis_client, settings)
    await memory.store(U, C, turn("t2", "user", "Hallo"))
    reset = Meanwhile(lambda: SessionMemory(redis_client, settings).reset(U, C))

    with pytest.raises(GuardFailed):
        await commit(redis_client, running, [reset, *turn_writes(memory)])

    assert reset.ran
    assert await redis_client.llen(keys.session_turns(U, C)) == 0  # the reset's empty session
    assert await redis_client.exists(keys.nova_state(U, C)) == 0


async def test_a_turn_failed_meanwhile_writes_nothing(redis_client, settings, running) -> None:
    memory = SessionMemory(redis_client, settings)
    failed = Meanwhile(lambda: redis_client.hset(keys.turn_record("t2"), "state", "failed"))

    with pytest.raises(GuardFailed):
        await commit(redis_client, running, [failed, *turn_writes(memory)])

    assert await redis_client.llen(keys.session_turns(U, C)) == 0


async def test_a_lost_marker_writes_nothing(redis_client, settings, running) -> None:
    memory = SessionMemory(redis_client, settings)
    await redis_client.set(keys.turn_marker(U, C), "instance-2:t3")  # another turn's now

    with pytest.raises(GuardFailed):
        await commit(redis_client, running, turn_writes(memory))

    assert await redis_client.llen(keys.session_turns(U, C)) == 0


async def test_a_summary_trim_meanwhile_moves_the_mark_with_the_turn(
        redis_client, settings, running) -> None:
    # The mark computes its list index under WATCH; a trim in between makes Redis drop the
    # transaction, and the retry marks the right turn at its new index.
    memory = SessionMemory(redis_client, settings)
    for index in range(3):
        await memory.store(U, C, turn(f"old{index}", "user", "alt"))
    await memory.store(U, C, turn("t2", "user", "Milch"))
    mark = memory.mark_write(U, C, ["t2"], success=False)
    trimmed = False

    class TrimAfterRead:
        watch = ()

        async def read(self, pipe: Pipeline) -> None:
            nonlocal trimmed
            if not trimmed:
                trimmed = True
                await redis_client.ltrim(keys.session_turns(U, C), 2, -1)

        def queue(self, pipe: Pipeline) -> None:
            return None

    await commit(redis_client, running, [mark, TrimAfterRead()])

    turns, _ = await memory.retrieve(U, C)
    assert [(t.turn_id, t.action_done, t.action_succeeded) for t in turns] == [
        ("old2", None, None), ("t2", True, False)]


async def test_writes_that_read_nothing_go_in_one_guarded_call(redis_client, settings,
                                                                running) -> None:
    memory = SessionMemory(redis_client, settings)
    blind = [memory.store_write(U, C, turn("t2", "assistant", "Antwort")),
             save_state_write(U, C, CharacterState(emotion="froh", arousal=0.7))]

    await commit(redis_client, running, blind)

    assert [t.content for t in (await memory.retrieve(U, C))[0]] == ["Antwort"]
    assert (await load_state(redis_client, U, C)).emotion == "froh"
    assert await redis_client.ttl(keys.session_turns(U, C)) > 0


@pytest.mark.parametrize("meanwhile", ["reset", "failed"])
async def test_writes_that_read_nothing_land_nowhere_after_a_reset_or_failure(
        redis_client, settings, running, meanwhile) -> None:
    memory = SessionMemory(redis_client, settings)
    if meanwhile == "reset":
        await memory.reset(U, C)
    else:
        await redis_client.hset(keys.turn_record("t2"), "state", "failed")

    with pytest.raises(GuardFailed):
        await commit(redis_client, running, [memory.store_write(U, C, turn("t2", "assistant",
                                                                           "zu spät"))])

    assert await redis_client.llen(keys.session_turns(U, C)) == 0
