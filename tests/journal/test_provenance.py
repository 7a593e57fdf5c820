"""Where each sentence of a saved entry came from (issue 40 item 2), through the real server:
a version taken from a draft keeps the draft's map (each sentence with the lines it drew
on), a sentence the user changed, typed or copied back from what the draft left out is the
user's edit, and the versions of before still read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.auth.accounts import add_user_sync
from app.core.settings import defaults
from app.storage.migrations import apply_migrations
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.journal.test_api import (
    DATE,
    call,
    draft_of,
    generate,
    import_day,
    jclient,  # noqa: F401 - the fixture
    journal_app,  # noqa: F401 - the fixture
    valid_reconstruction,
)
from tests.journal.test_narration import HONEST, INVENTED
from tests.store import store_connection
from tests.waiting import wait_job

FIRST, SECOND, THIRD = (
    "Um 6:00 Uhr bin ich müde aufgestanden.",
    "Zum Frühstück gab es Brot mit Anna.",
    "Gegen 9 habe ich gelesen, vielleicht war es auch später.",
)
CHANGED = "Zum Frühstück gab es Brot und Honig mit Anna."


def from_draft(text: str, source: str, draft_id: str) -> dict[str, Any]:
    return {"text": text, "sources": [source], "origin": "draft", "draft_id": draft_id}


def edit(text: str) -> dict[str, Any]:
    return {"text": text, "sources": [], "origin": "edit", "draft_id": None}


async def honest_draft(client: Any, fake_model: Any, narration: str = HONEST,
                       retry: str | None = None) -> dict[str, Any]:
    fake_model.script("journal_reconstruct", valid_reconstruction())
    fake_model.script("journal_generate", narration, *([retry] if retry else []))
    await import_day(client)
    return await draft_of(client, await generate(client))


async def test_a_saved_draft_keeps_its_map_and_the_changed_sentence_is_the_users(jclient,
                                                                                   fake_model):
    draft = await honest_draft(jclient, fake_model)
    assert draft["text"] == HONEST
    draft_id = draft["draft_id"]
    # Taken over as it is ("Use as entry"): every sentence the draft's, with its line.
    entry = await call(jclient, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": draft["text"], "draft_id": draft_id})
    [v1] = entry["versions"]
    assert v1["provenance"] == [from_draft(FIRST, "u1", draft_id),
                                from_draft(SECOND, "u2", draft_id),
                                from_draft(THIRD, "u3", draft_id)]
    # The user changes one sentence in the entry and saves: that one is the user's edit, the
    # others keep the draft's lines.
    entry_id = entry["entry_id"]
    edited = await call(jclient, "PUT", f"/api/journal/entries/{entry_id}",
                        json={"text": HONEST.replace(SECOND, CHANGED)})
    v2 = edited["versions"][1]
    assert (v2["origin"], v2["draft_id"]) == ("edit", None)
    assert v2["provenance"] == [from_draft(FIRST, "u1", draft_id), edit(CHANGED),
                                from_draft(THIRD, "u3", draft_id)]
    # A further edit that only moves whitespace changes no sentence's origin; its own text
    # is kept as written.
    spaced = f"{FIRST}  {CHANGED}\n\n{THIRD.replace(', ', ',  ')}\nNoch ein Satz."
    again = await call(jclient, "PUT", f"/api/journal/entries/{entry_id}", json={"text": spaced})
    assert [(s["origin"], s["sources"]) for s in again["versions"][2]["provenance"]] == [
        ("draft", ["u1"]), ("edit", []), ("draft", ["u3"]), ("edit", [])]
    assert again["versions"][2]["provenance"][2]["text"] == THIRD.replace(", ", ",  ")
    # A restore brings the map of the version it restores.
    restored = await call(jclient, "POST", f"/api/journal/entries/{entry_id}/restore",
                          json={"version_id": v1["version_id"]})
    assert restored["versions"][-1]["provenance"] == v1["provenance"]
    # The day answers the same versions as the entry.
    day = await call(jclient, "GET", f"/api/journal/days/{DATE}")
    assert day["entry"]["versions"] == restored["versions"]


async def test_a_draft_taken_over_with_a_changed_text_and_a_left_out_sentence_copied_back(
        jclient, fake_model):
    """A sentence the check left out is not the draft's: typed back by hand, it is the
    user's edit, never `draft`."""
    draft = await honest_draft(jclient, fake_model, f"{HONEST}\n\n{INVENTED}",
                               f"{HONEST}\n\n{INVENTED}")
    left = [s["text"] for s in draft["support"]["left_out"]]
    assert left and left[1] == "Ich war glücklich wie lange nicht."
    text = f"{FIRST}\n{CHANGED} {THIRD}\n\n{left[1]}"
    entry = await call(jclient, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": text, "draft_id": draft["draft_id"]})
    [version] = entry["versions"]
    assert version["origin"] == "draft" and version["draft_id"] == draft["draft_id"]
    assert version["provenance"] == [from_draft(FIRST, "u1", draft["draft_id"]), edit(CHANGED),
                                     from_draft(THIRD, "u3", draft["draft_id"]), edit(left[1])]


async def test_a_next_version_from_a_new_draft_is_mapped_against_that_draft(jclient,
                                                                             fake_model):
    first = await honest_draft(jclient, fake_model)
    entry = await call(jclient, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": "Von Hand, ganz anders."})
    assert entry["versions"][0]["provenance"] == [edit("Von Hand, ganz anders.")]
    taken = await call(jclient, "PUT", f"/api/journal/entries/{entry['entry_id']}",
                       json={"text": f"{THIRD} Von Hand, ganz anders.",
                             "draft_id": first["draft_id"]})
    assert taken["versions"][-1]["provenance"] == [
        from_draft(THIRD, "u3", first["draft_id"]), edit("Von Hand, ganz anders.")]


async def test_an_entry_typed_by_hand_is_every_sentence_the_users(jclient):
    entry = await call(jclient, "POST", "/api/journal/entries", 201,
                       json={"date": "2025-12-24", "text": "Heiligabend. Es schneite."})
    assert entry["versions"][0]["provenance"] == [edit("Heiligabend."), edit("Es schneite.")]


async def test_a_draft_of_another_user_or_day_is_refused_and_writes_nothing(
        aiohttp_client, journal_app, settings, fake_model):
    conn = store_connection(settings)
    apply_migrations(conn)
    anna = {"Authorization": f"Bearer {add_user_sync(conn, 'anna', 'correct horse battery')}"}
    conn.close()
    client = await aiohttp_client(journal_app())
    mine = await honest_draft(client, fake_model)
    await import_day(client, date="2026-03-02")
    other_day = await draft_of(client, await generate(client, "2026-03-02"))
    # Anna names my draft: not hers (404, the error shape), and she has no entry after.
    refused = await client.post("/api/journal/entries", headers=anna,
                                json={"date": DATE, "text": HONEST, "draft_id": mine["draft_id"]})
    assert refused.status == 404
    assert (await refused.json())["error"]["code"] == "not_found"
    day = await client.get(f"/api/journal/days/{DATE}", headers=anna)
    assert (await day.json())["entry"] is None
    # My draft of another day is not this day's: no entry, no version.
    wrong = await call(client, "POST", "/api/journal/entries", 404,
                       json={"date": DATE, "text": HONEST, "draft_id": other_day["draft_id"]})
    assert set(wrong["error"]) == {"code", "message"} and wrong["error"]["code"] == "not_found"
    assert (await call(client, "GET", f"/api/journal/days/{DATE}"))["entry"] is None
    entry = await call(client, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": HONEST, "draft_id": mine["draft_id"]})
    # Anna's own draft is not mine either.
    await client.post("/api/journal/import", headers=anna,
                      json={"date": DATE, "messages": [{"role": "user", "text": "Annas Tag."}]})
    started = await client.post(f"/api/journal/days/{DATE}/drafts", headers=anna)
    assert started.status == 202
    hers = await wait_job(client, (await started.json())["job_id"], headers=anna)
    assert hers["state"] == "done" and hers["draft_id"]
    for draft_id in (other_day["draft_id"], hers["draft_id"], "draft_nope"):
        wrong = await call(client, "PUT", f"/api/journal/entries/{entry['entry_id']}", 404,
                           json={"text": HONEST, "draft_id": draft_id})
        assert wrong["error"]["code"] == "not_found"
    kept = await call(client, "GET", f"/api/journal/entries/{entry['entry_id']}",
                      headers=AUTH)
    assert len(kept["versions"]) == 1


async def test_versions_from_before_the_map_read_and_their_edits_say_what_is_known(
        jclient, fake_model, in_store):
    """Rows from before m015 have `provenance_json` '[]' (the migration's default): they read
    as no map. An edit of one that was a draft taken over is mapped against that draft; an
    edit of one typed by hand before has no map either (what came from where is not known)."""
    draft = await honest_draft(jclient, fake_model)
    taken = await call(jclient, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": HONEST, "draft_id": draft["draft_id"]})
    by_hand = await call(jclient, "POST", "/api/journal/entries", 201,
                         json={"date": "2026-03-05", "text": "Alt. Von Hand."})
    with in_store() as conn:
        conn.execute("UPDATE journal_entry_versions SET provenance_json = '[]'")
    old = await call(jclient, "GET", f"/api/journal/entries/{taken['entry_id']}")
    assert old["versions"][0]["provenance"] == []
    edited = await call(jclient, "PUT", f"/api/journal/entries/{taken['entry_id']}",
                        json={"text": HONEST.replace(SECOND, CHANGED)})
    assert [s["origin"] for s in edited["versions"][1]["provenance"]] == [
        "draft", "edit", "draft"]
    hand = await call(jclient, "PUT", f"/api/journal/entries/{by_hand['entry_id']}",
                      json={"text": "Alt. Neu dazu."})
    assert [v["provenance"] for v in hand["versions"]] == [[], []]


def test_a_version_written_before_the_migration_reads_without_a_map(tmp_path):
    from app.journal.rows import entry_of, entry_row
    from tests.migrations_support import database_before

    conn = database_before(tmp_path / "old.sqlite3", "m015_journal_provenance")
    with conn:
        conn.execute("INSERT INTO journal_spaces VALUES ('s', 'local', 'user', 0)")
        conn.execute("INSERT INTO journal_days VALUES ('d', 's', '2026-03-01', '{}', 0)")
        conn.execute("INSERT INTO journal_entries VALUES ('e', 'd', 'v', 0, NULL)")
        conn.execute("INSERT INTO journal_entry_versions (version_id, entry_id, seq, origin, "
                     "text, draft_id, created_at) VALUES ('v', 'e', 1, 'edit', 'Alt.', NULL, 0)")
    assert apply_migrations(conn)[0] == "m015_journal_provenance"
    entry = entry_of(conn, entry_row(conn, "local", "e"))
    [version] = entry.versions
    assert version.text == "Alt." and version.provenance == []
    conn.close()


def another_install(folder: Path) -> Any:
    folder.mkdir()
    return create_app(defaults(data_dir=str(folder), llm_provider="offline"), local_token=TOKEN)


async def test_the_map_travels_with_the_journal_export_and_an_old_document_imports(
        jclient, fake_model, aiohttp_client, tmp_path):
    draft = await honest_draft(jclient, fake_model)
    entry = await call(jclient, "POST", "/api/journal/entries", 201,
                       json={"date": DATE, "text": HONEST.replace(SECOND, CHANGED),
                             "draft_id": draft["draft_id"]})
    exported = await call(jclient, "GET", "/api/exports/journal?format=json")
    [version] = exported["entries"][0]["versions"]
    assert version["provenance"] == entry["versions"][0]["provenance"]
    second = await aiohttp_client(another_install(tmp_path / "second"))
    assert (await call(second, "POST", "/api/imports", json=exported))["imported"] == 1
    copied = await call(second, "GET", f"/api/journal/entries/{entry['entry_id']}")
    assert copied["versions"][0]["provenance"] == version["provenance"]
    # A document from before the map: its versions read without one.
    del version["provenance"]
    exported["entries"][0]["entry_id"] = "entry_old"
    exported["entries"][0]["current_version_id"] = version["version_id"] = "ver_old"
    third = await aiohttp_client(another_install(tmp_path / "third"))
    assert (await call(third, "POST", "/api/imports", json=exported))["imported"] == 1
    assert (await call(third, "GET", "/api/journal/entries/entry_old"))["versions"][0][
        "provenance"] == []
    # A sentence of an origin the journal does not know refuses the document.
    version["provenance"] = [{"text": "x", "sources": [], "origin": "model", "draft_id": None}]
    exported["entries"][0]["entry_id"], version["version_id"] = "entry_bad", "ver_bad"
    exported["entries"][0]["current_version_id"] = "ver_bad"
    refused = await call(third, "POST", "/api/imports", 400, json=exported)
    assert set(refused["error"]) == {"code", "message"}
    assert "origin" in refused["error"]["message"], refused
