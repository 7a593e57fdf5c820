"""bench/scaleout.py (issue 26, item 5) cannot rot: its checks find what they are there to find,
and its smallest configuration runs and passes on a real PostgreSQL and Redis.

The run is under `postgres_only` (`make test-postgres`): the bench starts its own PostgreSQL
cluster, as the test session does, and `make test` starts none."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench.scaleout import JOURNAL_USER, BurstResult, Posted, UserSocket, check_run

ROOT = Path(__file__).resolve().parents[2]

JOURNAL = {"anna": ["Mit Anna war ich heute am See, so steht es im ersten Bericht."]}


class TestTheChecks:
    """`check_run` on a run's outcome as the bench gathers it: two messages of one user, one
    turn each, answered once, both rows in the database."""

    def outcome(self) -> dict[str, Any]:
        sockets = {"u1": SimpleNamespace(closes=Counter({"m1": 1, "m2": 1}), failed=set(),
                                         closed_at={})}
        rows = {"m1": {"user": [("u1", "t1", "a")], "assistant": [("u1", "t1r", "A")]},
                "m2": {"user": [("u1", "t2", "b")],
                       "assistant": [("u1", "t2r", "B")]}}
        return {"sockets": sockets, "how": {"m1": "ws", "m2": "api:delivered"},
                "stored": {"rows": rows, "texts": {}}, "expected": {"m1": "u1", "m2": "u1"},
                "journal": dict(JOURNAL), "reference": dict(JOURNAL)}

    def problems(self, o: dict[str, Any]) -> list[str]:
        result = BurstResult(2, [Posted("u1", "anna", "a", 0.0, 1.0, "m1")], [], o["sockets"],
                             1.0, None, o["journal"], [])
        return check_run(result, o["how"], o["stored"], o["expected"], o["reference"])

    def test_a_clean_run_passes(self):
        assert self.problems(self.outcome()) == []

    def test_an_id_closed_twice_fails(self):
        o = self.outcome()
        o["sockets"]["u1"].closes["m1"] = 2
        [problem] = self.problems(o)
        assert "closed more than once" in problem and "m1" in problem

    def test_an_id_never_closed_fails(self):
        o = self.outcome()
        o["how"]["m2"] = "open:accepted"
        assert any("never closed" in p and "m2" in p for p in self.problems(o))

    @pytest.mark.parametrize("change,expected", [
        (lambda rows: rows.pop("m1"), "without their user row"),
        (lambda rows: rows["m1"]["user"].append(("u1", "t9", "a")), "more than one"),
        (lambda rows: rows["m1"]["assistant"].append(("u1", "t9", "A")), "more than one"),
        (lambda rows: rows["m2"].update(user=[("u2", "t2", "b")]), "another user"),
        (lambda rows: rows["m2"].update(assistant=[]), "without an assistant row"),
    ])
    def test_a_day_not_whole_in_the_database_fails(self, change, expected):
        o = self.outcome()
        change(o["stored"]["rows"])
        assert any(expected in p for p in self.problems(o)), self.problems(o)

    def test_a_failure_notice_needs_no_assistant_row(self):
        o = self.outcome()
        o["sockets"]["u1"].failed.add("m2")
        o["stored"]["rows"]["m2"]["assistant"] = []
        assert self.problems(o) == []

    def test_a_turn_failed_before_its_dispatcher_has_no_row_at_all(self):
        o = self.outcome()
        o["sockets"]["u1"].failed.add("m2")
        o["stored"]["rows"].pop("m2")
        assert self.problems(o) == []

    def test_a_journal_unlike_the_single_process_one_fails(self):
        o = self.outcome()
        o["journal"] = {"anna": list(reversed(JOURNAL["anna"] + ["Noch ein Satz."]))}
        [problem] = self.problems(o)
        assert JOURNAL_USER in problem and "single-process" in problem


class TestTheSocket:
    """A user's socket closes an id on its answer or its failure notice, whether the bench
    waits for it before or after the event."""

    @pytest.mark.parametrize("kind", ["character_response", "turn_failed"])
    async def test_a_waiter_is_woken_by_the_event_that_closes_its_id(self, kind):
        socket = UserSocket(None, "token", 0)  # type: ignore[arg-type]
        waiting = asyncio.create_task(socket.wait_closed("m1", 5.0))
        await asyncio.sleep(0)
        socket._seen({"type": kind, "message_ids": ["m1", "m2"], "reason": "lock_timeout"})
        assert await waiting
        assert await socket.wait_closed("m2", 0.01)
        assert socket.closes == Counter({"m1": 1, "m2": 1})
        assert (socket.failed == {"m1", "m2"}) == (kind == "turn_failed")

    async def test_other_events_close_nothing(self):
        socket = UserSocket(None, "token", 0)  # type: ignore[arg-type]
        socket._seen({"type": "turn_state", "message_ids": ["m1"], "state": "path1"})
        assert not await socket.wait_closed("m1", 0.01)


@pytest.mark.postgres_only
def test_the_smallest_scale_out_runs_and_its_checks_pass(tmp_path):
    """Two processes on one PostgreSQL and one Redis, 20 pairs × 2 messages, one kill -9 at
    a third: every id closed once, every row in the shared database, the journal equal to
    one process's."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "scaleout.py"), "--processes", "2", "--users",
         "2", "--characters", "10", "--messages", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=420, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "process 1 killed at one third, healthy again" in output, output
    assert "reference: the journal of u000 on one process: 20 statements in 10 conversations" \
        in output, output
    assert output.count("checks: all passed") == 1, output
