"""Two writers of the same rows at once (issue 38, item 12): two tabs saving one journal entry,
two imports of one memory export. On PostgreSQL the writers are two processes, each with a
writer of its own, and only the database keeps them apart: every edit is kept as a version
of its own (the last one saved is the entry's text), an import adds each memory once and
skips it the other time — and no request answers 5xx. In one process (SQLite's only way, and
one process of PostgreSQL) the store's one writer takes the requests in turn; the same holds.

The processes are the real entry point (`python -m app`, tests/procs.py) on the test's
database and one Redis, as a scale-out install runs them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from app.core.settings import Settings
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.procs import AppProcess, clean_env
from tests.store import store_transaction

ROUNDS = 20
MEMORIES = 25  # per document: an import's transaction long enough to overlap the other's
ENTRIES = 5
DATE = "2026-03-14"


def day(round_no: int, n: int = 0) -> str:
    """A date of its own for each round (and each entry `n` of a round: a new entry of the
    round is on `n` 0, an imported one on 1…`ENTRIES`, one taken back from the trash on 9),
    in 2025."""
    return (dt.date(2025, 1, 1) + dt.timedelta(days=round_no * 10 + n)).isoformat()


def journal_document(round_no: int) -> bytes:
    """A journal export of `ENTRIES` new entries (ids and days of this round), in the shape
    `GET /api/exports/journal?format=json` writes."""
    return json.dumps({
        "kind": "novaberg.journal", "format_version": 1,
        "entries": [{"entry_id": f"import-{round_no:02d}-{n}", "date": day(round_no, n + 1),
                     "created_at": 1.7e9, "current_version_id": f"import-{round_no:02d}-{n}",
                     "versions": [{"version_id": f"import-{round_no:02d}-{n}", "seq": 1,
                                   "origin": "edit", "text": f"Tag {n} der Runde {round_no}.",
                                   "created_at": 1.7e9}]}
                    for n in range(ENTRIES)],
    }).encode()


def memory_document(round_no: int) -> bytes:
    """A memory export of `MEMORIES` new ones (ids of this round), in the shape
    `GET /api/exports/memories?format=json` writes."""
    return json.dumps({
        "kind": "novaberg.memories", "format_version": 1,
        "memories": [{"memory_id": f"{round_no:02d}{n:030d}", "character_id": "nova",
                      "text": f"Runde {round_no}, Erinnerung {n}.", "kind": "fact",
                      "importance": 0.5, "created_at": 1.7e9 + round_no * 100 + n,
                      "refreshed_at": 1.7e9 + round_no * 100 + n}
                     for n in range(MEMORIES)],
    }).encode()


async def answer(session: aiohttp.ClientSession, method: str, url: str,
                 **kw: Any) -> tuple[int, Any]:
    async with session.request(method, url, headers=AUTH, **kw) as response:
        body = await response.read()
        return response.status, json.loads(body) if body else None


async def race_edits(session: aiohttp.ClientSession, urls: list[str]) -> list[tuple[int, Any]]:
    """One entry saved `ROUNDS` times from every URL at once; the entry and the answers."""
    status, entry = await answer(session, "POST", f"{urls[0]}/api/journal/entries",
                                 json={"date": DATE, "text": "Erste Fassung."})
    assert status == 201, entry
    answers = []
    for round_no in range(ROUNDS):
        answers += await asyncio.gather(*(
            answer(session, "PUT", f"{url}/api/journal/entries/{entry['entry_id']}",
                   json={"text": f"Runde {round_no} aus Tab {tab}."})
            for tab, url in enumerate(urls)))
    return [(201, entry), *answers]


async def existing_days(session: aiohttp.ClientSession, url: str, dates: list[str]) -> None:
    """The days there without an entry (an entry written and put in the trash): a new day's
    row is made once, by whichever writer comes first, and makes the other wait — a race for
    the entry itself is on a day that is there already."""
    for date in dates:
        status, entry = await answer(session, "POST", f"{url}/api/journal/entries",
                                     json={"date": date, "text": "Verworfen."})
        assert status == 201, entry
        status, _ = await answer(session, "DELETE", f"{url}/api/journal/entries/"
                                 f"{entry['entry_id']}")
        assert status == 204


async def race_new_entries(session: aiohttp.ClientSession,
                           urls: list[str]) -> list[list[tuple[int, Any]]]:
    """A day's first live entry written from every URL at once, `ROUNDS` days."""
    await existing_days(session, urls[0], [day(round_no) for round_no in range(ROUNDS)])
    return [await asyncio.gather(*(
        answer(session, "POST", f"{url}/api/journal/entries",
               json={"date": day(round_no), "text": f"Aus Tab {tab}."})
        for tab, url in enumerate(urls))) for round_no in range(ROUNDS)]


async def race_undeletes(session: aiohttp.ClientSession,
                         urls: list[str]) -> list[list[tuple[int, Any]]]:
    """Two entries of one day in the trash, taken back from every URL at once (each URL
    another entry), `ROUNDS` days."""
    rounds = []
    for round_no in range(ROUNDS):
        trashed = []
        for tab in range(len(urls)):
            status, entry = await answer(session, "POST", f"{urls[0]}/api/journal/entries",
                                         json={"date": day(round_no, 9), "text": f"{tab}."})
            assert status == 201, entry
            await answer(session, "DELETE", f"{urls[0]}/api/journal/entries/{entry['entry_id']}")
            trashed.append(entry["entry_id"])
        rounds.append(await asyncio.gather(*(
            answer(session, "POST", f"{url}/api/journal/entries/{entry_id}/undelete")
            for url, entry_id in zip(urls, trashed, strict=True))))
    return rounds


async def race_imports(session: aiohttp.ClientSession,
                       urls: list[str]) -> list[list[tuple[int, Any]]]:
    """The same new memory export, and the same new journal export, imported from every URL
    at once, `ROUNDS` times each."""
    await existing_days(session, urls[0], [day(round_no, n + 1) for round_no in range(ROUNDS)
                                           for n in range(ENTRIES)])
    return [await asyncio.gather(*(
        answer(session, "POST", f"{url}/api/imports", data=document) for url in urls))
        for round_no in range(ROUNDS)
        for document in (memory_document(round_no), journal_document(round_no))]


def check_edits(settings: Settings, answers: list[tuple[int, Any]], writers: int) -> None:
    (_, created), *edits = answers
    assert [status for status, _ in edits] == [200] * (ROUNDS * writers), edits
    with store_transaction(settings) as conn:
        versions = conn.execute(
            "SELECT seq, text FROM journal_entry_versions WHERE entry_id = ? ORDER BY seq",
            (created["entry_id"],)).fetchall()
        current = conn.execute(
            "SELECT v.seq FROM journal_entries e JOIN journal_entry_versions v "
            "ON v.version_id = e.current_version_id WHERE e.entry_id = ?",
            (created["entry_id"],)).fetchone()[0]
    # Every save is a version of its own, numbered without a gap; the entry shows the last.
    assert [seq for seq, _ in versions] == list(range(1, ROUNDS * writers + 2))
    assert sorted(text for _, text in versions[1:]) == sorted(
        f"Runde {r} aus Tab {t}." for r in range(ROUNDS) for t in range(writers))
    assert current == len(versions)


def check_new_entries(settings: Settings, rounds: list[list[tuple[int, Any]]]) -> None:
    for answers in rounds:  # one is written, the other told the day has one (never two)
        assert sorted(status for status, _ in answers) == [201, 409], answers
        [(_, refused)] = [answer for answer in answers if answer[0] == 409]
        assert refused["error"]["code"] == "entry_exists"
    with store_transaction(settings) as conn:
        live = dict(conn.execute(
            "SELECT d.calendar_date, count(*) FROM journal_entries e JOIN journal_days d "
            "ON d.day_id = e.journal_day_id WHERE e.deleted_at IS NULL "
            "GROUP BY d.calendar_date").fetchall())
    assert [live.get(day(r)) for r in range(ROUNDS)] == [1] * ROUNDS


def check_undeletes(settings: Settings, rounds: list[list[tuple[int, Any]]]) -> None:
    for answers in rounds:  # one comes back, the other is told the day has one now
        assert sorted(status for status, _ in answers) == [200, 409], answers
        [(_, refused)] = [answer for answer in answers if answer[0] == 409]
        assert refused["error"]["code"] == "entry_exists"
    with store_transaction(settings) as conn:
        live = dict(conn.execute(
            "SELECT d.calendar_date, count(*) FROM journal_entries e JOIN journal_days d "
            "ON d.day_id = e.journal_day_id WHERE e.deleted_at IS NULL "
            "GROUP BY d.calendar_date").fetchall())
    assert [live.get(day(r, 9)) for r in range(ROUNDS)] == [1] * ROUNDS


def check_imports(settings: Settings, rounds: list[list[tuple[int, Any]]]) -> None:
    for answers in rounds:
        assert [status for status, _ in answers] == [200] * len(answers), answers
        # Each item imported by one of the imports and skipped by every other.
        kind = answers[0][1]["kind"]
        items = MEMORIES if kind == "novaberg.memories" else ENTRIES
        assert sum(body["imported"] for _, body in answers) == items, answers
        assert sum(body["skipped"] for _, body in answers) == items * (len(answers) - 1)
    with store_transaction(settings) as conn:
        rows = conn.execute("SELECT id, memory_id FROM memories").fetchall()
        pairs = conn.execute("SELECT count(*) FROM memory_pairs").fetchone()[0]
        entries = conn.execute(
            "SELECT e.entry_id, d.calendar_date FROM journal_entries e JOIN journal_days d "
            "ON d.day_id = e.journal_day_id WHERE e.entry_id LIKE 'import-%'"
        ).fetchall()
    assert sorted(tuple(row) for row in entries) == sorted(
        (f"import-{r:02d}-{n}", day(r, n + 1)) for r in range(ROUNDS) for n in range(ENTRIES))
    assert len(rows) == ROUNDS * MEMORIES
    assert {memory_id for _, memory_id in rows} == {
        f"{r:02d}{n:030d}" for r in range(ROUNDS) for n in range(MEMORIES)}
    assert pairs == 1  # (local, nova), numbered once


@pytest.fixture
async def two_processes(tmp_path: Path, session_redis) -> AsyncIterator[list[AppProcess]]:
    """Two app processes on the test's PostgreSQL and one Redis, each its own data dir."""
    processes = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        processes.append(AppProcess(
            tmp_path / name, token=TOKEN, env=clean_env(NOVABERG_LLM_PROVIDER="offline"),
            extra_args=["--redis-url", session_redis.url("shared")]))
    try:
        await asyncio.gather(*(asyncio.to_thread(p.start) for p in processes))
        yield processes
    finally:
        for process in processes:
            if process.process is not None and process.process.poll() is None:
                await asyncio.to_thread(process.stop)
    for process in processes:  # nothing failed on the side either (a logged error)
        errors = [line for line in process.output().splitlines() if '"level":"error"' in line]
        assert errors == [], errors[0][:2000]


@pytest.mark.postgres_only
async def test_two_processes_writing_one_entry_at_once_keep_every_version_and_one_a_day(
        two_processes: list[AppProcess], make_settings: Callable[..., Settings]) -> None:
    async with aiohttp.ClientSession() as session:
        answers = await race_edits(session, [p.url for p in two_processes])
        new_entries = await race_new_entries(session, [p.url for p in two_processes])
        undeletes = await race_undeletes(session, [p.url for p in two_processes])
    check_edits(make_settings(), answers, writers=2)
    check_new_entries(make_settings(), new_entries)
    check_undeletes(make_settings(), undeletes)


@pytest.mark.postgres_only
async def test_two_processes_importing_one_export_at_once_add_each_item_once(
        two_processes: list[AppProcess], make_settings: Callable[..., Settings]) -> None:
    async with aiohttp.ClientSession() as session:
        rounds = await race_imports(session, [p.url for p in two_processes])
    check_imports(make_settings(), rounds)


async def test_one_process_takes_the_same_writes_in_turn(
        aiohttp_client, make_settings: Callable[..., Settings]) -> None:
    """SQLite (and one process of PostgreSQL): two requests at once through one server."""
    settings = make_settings(llm_provider="offline")
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    url = str(client.make_url("")).rstrip("/")
    async with aiohttp.ClientSession() as session:
        edits = await race_edits(session, [url, url])
        new_entries = await race_new_entries(session, [url, url])
        undeletes = await race_undeletes(session, [url, url])
        imports = await race_imports(session, [url, url])
    check_edits(settings, edits, writers=2)
    check_new_entries(settings, new_entries)
    check_undeletes(settings, undeletes)
    check_imports(settings, imports)
