"""Long-term memory in SQLite (design §3a; app/memory/long_term.py): consolidation writes
(add, refresh, supersede; a trigger applied twice changes nothing), the trigram index
("Leipzig" finds "Leipziger" and the other way round), retrieval ranking and the whole-memory
budget, pairs kept apart, and forgetting for real (the text is gone from the database
files)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.memory.long_term import Change, LongTermMemory, memory_line, within_budget

DAY = 86400.0


@pytest.fixture
async def store(tmp_path: Path, make_database):
    db = make_database(tmp_path / "memories.sqlite3")
    await db.open()
    try:
        yield LongTermMemory(db)
    finally:
        await db.close()


async def remember(store: LongTermMemory, text: str, *, kind: str = "fact",
                   importance: float = 0.7, at: float | None = None, user: str = "u",
                   character: str = "nova", sources: tuple[str, ...] = ("m1",)) -> str:
    applied = await store.apply(f"t-{time.perf_counter_ns()}", user, character,
                                [Change("remember", text, kind, importance)], list(sources),
                                time.time() if at is None else at)
    assert applied is not None
    return (applied.added or applied.refreshed)[0]


def files_of(store: LongTermMemory) -> bytes:
    path = store.db.path
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


async def test_a_new_fact_is_added_with_its_sources(store):
    memory_id = await remember(store, "Meine Schwester heißt Jana.", kind="person",
                               sources=("m1", "m2"))
    [memory] = await store.list("u", "nova")
    assert memory.memory_id == memory_id and memory.kind == "person"
    assert memory.source_message_ids == ["m1", "m2"] and memory.superseded_by is None


async def test_the_same_fact_again_refreshes_it_without_a_duplicate(store):
    first = await remember(store, "Meine Schwester heißt Jana.", at=1000.0, sources=("m1",))
    applied = await store.apply("t2", "u", "nova",
                                [Change("remember", "meine Schwester heißt  Jana", "person")],
                                ["m9"], 2000.0)
    assert applied is not None and applied.refreshed == [first] and not applied.added
    [memory] = await store.list("u", "nova")
    assert memory.refreshed_at == 2000.0 and memory.created_at == 1000.0
    assert memory.source_message_ids == ["m1", "m9"]


async def test_a_correction_supersedes_the_old_memory_which_is_kept(store):
    old = await remember(store, "Jana wohnt in Leipzig.")
    applied = await store.apply("t2", "u", "nova",
                                [Change("supersede", "Jana wohnt in Dresden.", "person",
                                        memory_id=old)], ["m2"], time.time())
    assert applied is not None and applied.superseded == [(old, applied.added[0])]
    assert [m.text for m in await store.list("u", "nova")] == ["Jana wohnt in Dresden."]
    every = await store.list("u", "nova", include_superseded=True)
    assert {m.text: m.superseded_by for m in every} == {
        "Jana wohnt in Dresden.": None, "Jana wohnt in Leipzig.": applied.added[0]}
    # A superseded memory is never retrieved.
    found = await store.relevant("u", "nova", "Leipzig", top_k=5, now=time.time())
    assert found == []


async def test_a_trigger_applied_again_changes_nothing(store):
    change = [Change("remember", "Ich arbeite bei Siemens.")]
    assert await store.apply("same", "u", "nova", change, ["m1"], 1.0) is not None
    assert await store.apply("same", "u", "nova", change, ["m1"], 2.0) is None
    assert len(await store.list("u", "nova")) == 1


@pytest.mark.parametrize(("stored", "query"), [
    ("Jana wohnt in Leipzig.", "Leipziger"),
    ("Sie mag Leipziger Allerlei.", "Leipzig"),
    ("Meine Zwillingsschwester kommt.", "Schwester"),
    ("My sister lives in Manchester.", "sisters"),
])
async def test_trigram_search_matches_inflected_and_compound_words(store, stored, query):
    await remember(store, stored)
    assert [m.text for m in await store.list("u", "nova", query=query)] == [stored]
    assert [m.text for m in await store.relevant("u", "nova", f"Was ist mit {query}?",
                                                 top_k=5, now=time.time())] == [stored]


async def test_search_without_index_terms_is_a_substring_match_and_never_errors(store):
    # Queries the trigram index cannot look up (short words, stopwords, FTS5 syntax) are
    # matched as plain parts of the text, never as an FTS5 expression.
    await remember(store, "Jana wohnt in Leipzig.")
    for query in ('"', "ist", "* OR NEAR(", "AND"):
        assert await store.list("u", "nova", query=query) == []
    for query in ("a", "IN", "ja"):
        assert [m.text for m in await store.list("u", "nova", query=query)] == [
            "Jana wohnt in Leipzig."]


async def test_a_relevant_old_memory_beats_an_irrelevant_new_one(store):
    now = time.time()
    await remember(store, "Mein Hund heißt Bello.", at=now - 400 * DAY, importance=0.5)
    for index in range(20):
        await remember(store, f"Neuigkeit Nummer {index} über das Wetter.", at=now)
    found = await store.relevant("u", "nova", "Wie geht es meinem Hund?", top_k=5, now=now)
    assert [m.text for m in found][:1] == ["Mein Hund heißt Bello."]


async def test_among_matches_importance_and_recency_weigh(store):
    now = time.time()
    await remember(store, "Jana mag Katzen.", at=now - 300 * DAY, importance=0.2)
    await remember(store, "Jana mag Hunde.", at=now, importance=0.9)
    found = await store.relevant("u", "nova", "Jana", top_k=5, now=now)
    assert [m.text for m in found] == ["Jana mag Hunde.", "Jana mag Katzen."]
    assert await store.relevant("u", "nova", "Jana", top_k=1, now=now) == found[:1]


async def test_the_budget_keeps_whole_memories_in_rank_order(store, caplog):
    now = time.time()
    long_text = "Jana " + "erzählt sehr viel " * 30
    for text in ("Jana kommt Freitag.", long_text.strip(), "Jana lacht."):
        await remember(store, text, at=now)
    ranked = await store.relevant("u", "nova", "Jana", top_k=5, now=now)
    budget = len(memory_line(ranked[0], None)) + 60
    kept = within_budget(ranked, None, budget)
    assert all(m.text in {r.text for r in ranked} for m in kept)
    assert long_text.strip() not in [m.text for m in kept]  # left out whole, never cut
    assert sum(len(memory_line(m, None)) + 1 for m in kept) <= budget
    assert "memory_budget_chars" in caplog.text


async def test_pairs_never_see_each_others_memories(store):
    await remember(store, "Jana wohnt in Leipzig.", user="alice")
    await remember(store, "Tom wohnt in Leipzig.", user="bob")
    await remember(store, "Eva wohnt in Leipzig.", user="alice", character="other")
    assert [m.text for m in await store.list("alice", "nova", query="Leipzig")] == [
        "Jana wohnt in Leipzig."]
    found = await store.relevant("bob", "nova", "Leipzig", top_k=5, now=time.time())
    assert [m.text for m in found] == ["Tom wohnt in Leipzig."]
    [alice] = await store.list("alice", "nova")
    assert await store.forget("bob", "nova", alice.memory_id) is False
    assert await store.edit("bob", "nova", alice.memory_id, "x") is None


@pytest.mark.sqlite_only("reads the database file's bytes")
async def test_forgetting_is_real_the_text_leaves_the_database_files(store):
    keep = await remember(store, "Ich wohne in Quedlinburg.")
    gone = await remember(store, "Mein Geheimnis heißt Zwetschgenkuchenrezept.")
    assert b"Zwetschgenkuchenrezept" in files_of(store)
    assert await store.forget("u", "nova", gone) is True
    data = files_of(store)
    assert b"Zwetschgenkuchenrezept" not in data
    assert b"zwetschgen" not in data.lower() and b"kuchenrezept" not in data.lower()
    assert await store.list("u", "nova", query="Zwetschgenkuchen") == []
    assert [m.memory_id for m in await store.list("u", "nova")] == [keep]
    assert await store.forget("u", "nova", gone) is False


@pytest.mark.sqlite_only("reads the database file's bytes")
async def test_an_edit_leaves_no_trace_of_the_old_text(store):
    memory_id = await remember(store, "Ich arbeite bei Pflaumenwerk.")
    edited = await store.edit("u", "nova", memory_id, "Ich arbeite bei Birnenhaus.")
    assert edited is not None and edited.text == "Ich arbeite bei Birnenhaus."
    assert b"Pflaumenwerk" not in files_of(store)
    assert [m.text for m in await store.list("u", "nova", query="Birnenhaus")] == [edited.text]
    assert await store.list("u", "nova", query="Pflaumenwerk") == []


@pytest.mark.sqlite_only("reads the database file's bytes")
async def test_forget_all_clears_the_pair_only(store):
    await remember(store, "Ich mag Tee.")
    await remember(store, "Ich mag Kaffee.")
    await remember(store, "Ich mag Kakao.", user="other")
    assert await store.forget_all("u", "nova") == 2
    assert await store.list("u", "nova") == []
    assert len(await store.list("other", "nova")) == 1
    assert b"Kaffee" not in files_of(store)


async def test_last_used_and_reflection_marks(store):
    memory_id = await remember(store, "Morgen hab ich das Vorstellungsgespräch.", kind="plan",
                               at=1000.0)
    await store.touch({memory_id: 5000.0})
    [memory] = await store.list("u", "nova")
    assert memory.last_used_at == 5000.0
    assert [m.memory_id for m in await store.to_reflect_on("u", "nova", before=2000.0)] == [
        memory_id]
    assert await store.to_reflect_on("u", "nova", before=500.0) == []
    await store.mark_reflected(memory_id, 6000.0)
    assert await store.to_reflect_on("u", "nova", before=9000.0) == []


async def test_a_pairs_search_reads_only_its_own_rows_newest_first(store):
    """Every pair owns a range of row ids (m007): a word common in another pair's newer
    memories neither crowds out this pair's matches nor is walked through."""
    from app.memory.recall import TERM_POOL, pair_range

    old = await remember(store, "Meine Schwester Jana wohnt in Leipzig.", user="a", at=1000.0)
    for n in range(TERM_POOL + 5):  # newer, the same words, another pair
        await remember(store, f"Meine Schwester Nr{n} wohnt in Leipzig.", user="b", at=2000.0)
    [found] = await store.relevant("a", "nova", "Leipzig", top_k=5, now=3000.0)
    assert found.memory_id == old

    def ranges(conn):
        return pair_range(conn, "a", "nova"), pair_range(conn, "b", "nova"), [
            (row[0], row[1]) for row in conn.execute("SELECT user_id, id FROM memories")]

    range_a, range_b, rows = await store.db.execute_fn(ranges)
    assert range_a[1] < range_b[0]
    assert all(range_a[0] < rowid <= range_a[1] for user, rowid in rows if user == "a")
    assert all(range_b[0] < rowid <= range_b[1] for user, rowid in rows if user == "b")
    assert await store.db.execute_fn(lambda conn: pair_range(conn, "c", "nova")) is None
    assert await store.relevant("c", "nova", "Leipzig", top_k=5, now=3000.0) == []


@pytest.mark.sqlite_only("a SQLite file of before m007")
def test_m007_renumbers_existing_memories_by_pair_and_rebuilds_the_index(tmp_path):
    """A database from before m007 (ids of all pairs interleaved) keeps every memory, its
    order and its search."""
    from app.memory.recall import pair_range, ranked_ids
    from app.storage.migrations import apply_migrations
    from tests.migrations_support import database_before

    conn = database_before(tmp_path / "old.sqlite3", "m007_memories_by_pair")
    with conn:
        for n, (user, text) in enumerate([("a", "Jana wohnt in Leipzig."), ("b", "Tom mag Tee."),
                                          ("a", "Ich mag Jazz."), ("b", "Tom wohnt in Kassel.")]):
            conn.execute("INSERT INTO memories (memory_id, user_id, character_id, text, kind, "
                         "created_at, refreshed_at) VALUES (?, ?, 'nova', ?, 'fact', ?, ?)",
                         (f"id{n}", user, text, n, n))
    assert apply_migrations(conn)[0] == "m007_memories_by_pair"  # and the later ones
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    assert conn.execute("SELECT text_key FROM memories WHERE memory_id = 'id0'").fetchone()[
        0] == "jana wohnt in leipzig"
    first, last = pair_range(conn, "a", "nova")
    rows = conn.execute("SELECT memory_id, id FROM memories WHERE user_id = 'a' ORDER BY id")
    assert [(memory_id, last - rowid) for memory_id, rowid in rows] == [("id2", 1), ("id0", 0)]
    assert [row[0] for row in conn.execute(
        "SELECT memory_id FROM memories WHERE id IN (SELECT rowid FROM memories_fts "
        "WHERE memories_fts MATCH 'wohnt') ORDER BY id")] == ["id0", "id3"]
    best = ranked_ids(conn, "b", "nova", ["kassel", "wohnt"], 5, 10.0)
    assert conn.execute("SELECT memory_id FROM memories WHERE id = ?",
                        best[:1]).fetchone()[0] == "id3"
    conn.close()


async def test_an_edited_memory_is_the_one_the_same_fact_refreshes(store):
    """The duplicate check compares the stored text key, kept in step by an edit."""
    memory_id = await remember(store, "Ich arbeite bei Siemens.", at=1000.0)
    await store.edit("u", "nova", memory_id, "Ich arbeite bei  Bosch")
    applied = await store.apply("t-again", "u", "nova",
                                [Change("remember", "ich arbeite bei Bosch!")], ["m5"], 2000.0)
    assert applied.refreshed == [memory_id] and not applied.added
    applied = await store.apply("t-old", "u", "nova",
                                [Change("remember", "Ich arbeite bei Siemens.")], ["m6"], 3000.0)
    assert applied.added and not applied.refreshed


async def test_the_pool_of_a_word_is_its_newest_matches(store):
    from app.memory.recall import TERM_POOL

    ids = [await remember(store, f"Ausflug Nr{n} nach Leipzig.", at=1000.0 + n)
           for n in range(TERM_POOL + 5)]
    found = await store.relevant("u", "nova", "Leipzig", top_k=TERM_POOL + 5, now=5000.0)
    assert {m.memory_id for m in found} == set(ids[5:])


async def test_consolidation_finds_the_memory_to_correct_behind_a_full_pool_of_common_words(
        store):
    # Consolidation reads a smaller pool per word (recall.CANDIDATE_POOL); the memory a
    # correction names is found by its rare word even when the common ones fill the pool
    # with newer memories.
    from app.memory.recall import CANDIDATE_POOL

    now = time.time()
    old = await remember(store, "Jana wohnt in Leipzig.", at=now - 300 * DAY)
    for index in range(CANDIDATE_POOL + 20):
        await remember(store, f"Kollege Nummer {index} wohnt in der Stadt.", at=now - index)
    known = await store.candidates("u", "nova", "Jana wohnt jetzt in Dresden.", 8)
    assert known[0].memory_id == old
