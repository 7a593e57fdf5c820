"""Text search behaves the same on both engines (SQLite's FTS5 trigram index, PostgreSQL's
pg_trgm under ILIKE; app/storage/dialect.py): a word finds its longer forms, case does not
matter (umlauts included), two-letter queries work, and no query string is an error — the
signs of either engine's syntax (`%`, `_`, `\\`, quotes, `?`, FTS5 operators) are text.

Runs on the engine `--engine` names (`make test` SQLite, `make test-postgres` PostgreSQL)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.memory import history
from app.memory.long_term import Change, LongTermMemory
from app.memory.message_log import LoggedMessage, MessageLog

TEXTS = ["Wir fahren nach Leipzig.", "ÄPFEL schmecken im Herbst.", "Rabatt: 50% auf alles_neu",
         "Pfad C:\\temp und 'zitiert' mit \"Anführung\"", "Frage? Ja! NEAR(a b) OR c*"]


@pytest.fixture
async def db(tmp_path: Path, make_database):
    database = make_database(tmp_path / "search.sqlite3")
    await database.open()
    await MessageLog(database).append_all([
        LoggedMessage(entry_key=f"e{n}", user_id="u", character_id="nova", turn_id=f"t{n}",
                      message_ids=[f"m{n}"], role="user", occasion="", text=text,
                      created=1_700_000_000.0 + n, calendar_date="2026-03-01")
        for n, text in enumerate(TEXTS)])
    await LongTermMemory(database).apply("tr", "u", "nova", [
        Change("remember", text, "fact", 0.5) for text in TEXTS], ["m0"], time.time())
    try:
        yield database
    finally:
        await database.close()


async def found(db, query: str) -> tuple[list[str], list[str]]:
    lines, _ = await db.execute_fn(
        lambda conn: history.search(conn, "u", "nova", query, limit=20))
    memories = await LongTermMemory(db).list("u", "nova", query=query)
    return sorted(line.text for line in lines), sorted(m.text for m in memories)


@pytest.mark.parametrize(("query", "expected"), [
    ("Leipziger", [TEXTS[0]]),          # a longer form finds the word
    ("leipzig", [TEXTS[0]]),            # case
    ("äpfel", [TEXTS[1]]),              # case, umlaut
    ("50%", [TEXTS[2]]),                # LIKE's signs are text
    ("alles_neu", [TEXTS[2]]),
    ("C:\\temp", [TEXTS[3]]),
    ("'zitiert'", [TEXTS[3]]),
    ("NEAR(a b)", [TEXTS[4]]),          # FTS5's operators are text
    ("Ja", [TEXTS[4]]),                 # two letters
    ("00\x00", []),                     # a NUL: in no stored text, and no error
    ("Leipziger Herbst", []),           # every term (history) / any term (memories)
])
async def test_the_same_hits_on_either_engine(db, query, expected):
    lines, memories = await found(db, query)
    assert lines == expected
    if query == "Leipziger Herbst":
        assert memories == sorted([TEXTS[0], TEXTS[1]])
    else:
        assert memories == expected


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=30))
async def test_no_query_is_an_error(db, query):
    lines, memories = await found(db, query)
    assert set(lines) <= set(TEXTS) and set(memories) <= set(TEXTS)
