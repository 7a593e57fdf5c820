"""A diary the user already has (issue 22 §6) through the real server and the real CLI: the
Day One sample (tests/data/dayone, as JSON and as Day One's zip with its photos) and a folder
of Markdown files become journal entries — version 1, origin `import`, the day in each
entry's own zone, two entries of one day joined in time order, tags in the body — a second
import adds nothing, and a bad file names its first bad entry and writes nothing."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.backup.diary_formats import unescape
from app.backup.diary_import import ITEM_BREAK
from app.storage.datadir import DATABASE_FILE
from app.wiring.cli import main
from app.wiring.server import create_app
from tests.backup.diary_support import (
    DAYONE_JSON,
    MARKDOWN,
    PHOTOS,
    dayone_bytes,
    dayone_document,
    dayone_zip,
    markdown_zip,
    zipped,
)
from tests.conftest import AUTH, TOKEN
from tests.migrations_support import database_before

ROUTE = "/api/journal/import/diary"
DAYONE_DAYS = ["2025-03-14", "2025-07-02", "2025-07-03", "2025-07-05"]
MARKDOWN_DAYS = ["2025-03-14", "2025-03-15", "2025-03-16"]


async def upload(client, body: bytes, status: int = 200, language: str = "en",
                 name: str = "") -> dict[str, Any]:
    response = await client.post(ROUTE + (f"?name={name}" if name else ""), data=body,
                                  headers={**AUTH, "Accept-Language": language})
    answer = await response.json()
    assert response.status == status, answer
    return answer


async def entries(client) -> dict[str, dict[str, Any]]:
    listed = await (await client.get("/api/journal/export?format=json", headers=AUTH)).json()
    days = {e["date"] for e in listed["entries"]}
    found = {}
    for date in sorted(days):
        day = await (await client.get(f"/api/journal/days/{date}", headers=AUTH)).json()
        found[date] = day["entry"]
    return found


# --- Day One ------------------------------------------------------------------------------------

async def test_the_day_one_zip_becomes_entries_with_their_photos(client, data_dir):
    answer = await upload(client, dayone_zip())
    assert answer["source"] == "dayone" and answer["kind"] == "diary.dayone"
    assert (answer["items"], answer["imported"], answer["skipped"]) == (5, 5, 0)
    assert [e["date"] for e in answer["entries"]] == DAYONE_DAYS
    assert [e["items"] for e in answer["entries"]] == [2, 1, 1, 1]
    photos = answer["photos"]
    assert (photos["found"], photos["imported"], photos["not_imported"]) == (3, 3, 0)
    assert {p["md5"] for p in photos["items"]} == {p.stem for p in PHOTOS}
    assert all(p["in_archive"] and p["imported"] and p["asset_id"] for p in photos["items"])
    by_entry = {e["date"]: e["entry_id"] for e in answer["entries"]}
    assert [p["entry_id"] for p in photos["items"]] == [by_entry["2025-07-02"]] * 2 + [
        by_entry["2025-07-05"]]
    assert answer["notes"] == []
    # Each entry has its photos, the bytes of the zip's files (no location in the sample).
    for date, names in (("2025-07-02", 2), ("2025-07-05", 1)):
        entry = await (await client.get(f"/api/journal/entries/{by_entry[date]}",
                                        headers=AUTH)).json()
        assert len(entry["media"]) == names
        for media in entry["media"]:
            served = await client.get(media["url"], headers=AUTH)
            assert served.status == 200
            assert await served.read() in {p.read_bytes() for p in PHOTOS}

    stored = await entries(client)
    assert list(stored) == DAYONE_DAYS
    for entry in stored.values():
        [version] = entry["versions"]
        assert version["origin"] == "import" and version["sources"] == []
    # Day One's escapes undone, the tags under the text, the photo links kept for the media.
    holiday = stored["2025-07-02"]["text"]
    assert holiday.startswith("# Urlaub auf São Miguel\n\nHeute zum Kratersee Lagoa do Fogo "
                              "gewandert. Nebel, dann plötzlich Sonne.")
    assert "![](dayone-moment://6A1F0C2E9B3D4E5F8A7B6C5D4E3F2A1B)" in holiday
    assert holiday.endswith("im Vulkanboden gegart!\n\nTags: Urlaub, Azoren")
    assert "東京に着いた 🌸 — Ramen um 18:00. Schön, wieder" in stored["2025-07-05"]["text"]


async def test_two_entries_of_one_day_are_one_entry_in_time_order(client):
    document = dayone_document()
    document["entries"][:2] = document["entries"][1::-1]  # the evening first in the file
    await upload(client, dayone_bytes(document))
    text = (await entries(client))["2025-03-14"]["text"]
    morning, evening = text.split(ITEM_BREAK)
    assert morning == ("Frühstück auf dem Balkon. Die Amseln sind zurück! Kaffee mit "
                       "Hafermilch, 7:10 Uhr.\n\nTags: Zuhause")
    assert evening == ("Abends noch eingekauft:\n\n- Brot\n- Käse (der gute)\n- Äpfel\n\n"
                       "Morgen früh zum Zug. Ich freue mich.")


async def test_the_day_is_the_entry_own_zone_not_utc(client):
    await upload(client, DAYONE_JSON)
    days = [d["date"] for d in await (await client.get("/api/journal/days",
                                                       headers=AUTH)).json()]
    # 2025-07-04T02:15Z is 22:15 on the 3rd in New York; 09:00Z is 18:00 in Tokyo.
    assert "2025-07-03" in days and "2025-07-04" not in days
    assert sorted(days) == DAYONE_DAYS


async def test_importing_twice_adds_nothing_as_json_or_as_zip(client):
    first = await upload(client, dayone_zip(), language="de")
    assert first["photos"]["imported"] == 3 and first["notes"] == []
    before = await entries(client)
    for body in (dayone_zip(), DAYONE_JSON):
        again = await upload(client, body, language="de")
        assert (again["imported"], again["skipped"], again["entries"]) == (0, 5, [])
        assert again["photos"]["found"] == 0 and again["notes"] == []
    assert await entries(client) == before  # the photos too: none added twice
    assert sum(len(e["media"]) for e in before.values()) == 3


async def test_a_later_export_adds_its_new_days_and_never_touches_an_existing_entry(client):
    await client.post("/api/journal/entries", headers=AUTH,
                      json={"date": "2025-07-02", "text": "Von Hand geschrieben."})
    document = dayone_document()
    answer = await upload(client, dayone_bytes(document))
    assert answer["day_has_entry"] == ["2025-07-02"]
    assert answer["notes"] == [
        "1 photo not imported", "Not imported because the day has an entry already: 2025-07-02"]
    assert answer["photos"]["found"] == 1  # the Tokyo photo; the Azores day was not taken
    document["entries"].append({"uuid": "AA" * 16, "creationDate": "2025-07-06T08:00:00Z",
                                "timeZone": "Asia/Tokyo", "text": "Abreise\\."})
    document["entries"].append({"uuid": "BB" * 16, "creationDate": "2025-07-05T13:00:00Z",
                                "timeZone": "Asia/Tokyo", "text": "Nachtrag zum Tag\\."})
    later = await upload(client, dayone_bytes(document))
    assert (later["imported"], later["skipped"]) == (1, 4)
    assert later["day_has_entry"] == ["2025-07-02", "2025-07-05"]
    stored = await entries(client)
    assert stored["2025-07-02"]["text"] == "Von Hand geschrieben."
    assert stored["2025-07-06"]["text"] == "Abreise."
    assert "Nachtrag" not in stored["2025-07-05"]["text"]


def _mutated(index: int, **fields: Any) -> bytes:
    document = dayone_document()
    document["entries"][index].update(fields)
    return dayone_bytes(document)


BAD_DAYONE = [
    (_mutated(3, timeZone="Mars/Olympus_Mons"),
     "entries[3]: timeZone 'Mars/Olympus_Mons' is not a time zone"),
    (_mutated(2, creationDate="gestern Abend"), "entries[2]: creationDate"),
    (_mutated(1, creationDate="2025-03-14T20:41:10"), "entries[1]: creationDate"),
    # Year 10000 in its own zone: no day could be named (it answered 500).
    (_mutated(1, creationDate="9999-12-31T23:00:00Z", timeZone="Asia/Tokyo"),
     "entries[1]: creationDate '9999-12-31T23:00:00Z' is not a time from 1970 to the end"),
    (_mutated(4, photos=[{"identifier": "0F1E2D3C4B5A69788796A5B4C3D2E1F0", "md5": "nope"}]),
     "entries[4] (2025-07-05): photos[0]: md5 'nope' is not an MD5 checksum"),
    (_mutated(4, photos=[]), "entries[4] (2025-07-05): the text links photo "
     "'0F1E2D3C4B5A69788796A5B4C3D2E1F0', which is not among the entry's photos"),
    (_mutated(3, text="  \u200b "), "entries[3] (2025-07-03): the entry has no text"),
    (_mutated(0, tags=["Zuhause", " "]), "entries[0] (2025-03-14): a tag is empty"),
    (_mutated(1, text=42), "entries[1]: Expected `str`, got `int` - at `$.text`"),
    (_mutated(2, uuid="9E1B4C2A7D3F4E6A8B0C1D2E3F4A5B6C"),
     "entries[2] (2025-07-02): the same entry as entries[0] (2025-03-14)"),
    (b'{"metadata": {}, "entries": []}', "the Day One export has no entries"),
    (b'{"entries": [', "not a Day One export"),
]


@pytest.mark.parametrize(("body", "message"), BAD_DAYONE)
async def test_a_bad_day_one_export_names_its_first_bad_entry_and_writes_nothing(
        client, body, message):
    for sent in (body, zipped({"Journal.json": body})):
        answer = await upload(client, sent, status=400)
        assert answer["error"]["code"] == "invalid_diary"
        assert message in answer["error"]["message"]
    assert await (await client.get("/api/journal/days", headers=AUTH)).json() == []


async def test_a_photo_file_that_is_not_its_md5_refuses_the_zip(client):
    photo = PHOTOS[0]
    body = zipped({"Journal.json": DAYONE_JSON, f"photos/{photo.name}": b"not the photo"})
    answer = await upload(client, body, status=400)
    assert f"photos/{photo.name}" in answer["error"]["message"]
    assert "md5" in answer["error"]["message"]


async def test_a_zip_without_the_photo_files_still_imports_and_says_so(client):
    answer = await upload(client, dayone_zip(photos=False))
    assert answer["imported"] == 5
    assert [p["in_archive"] for p in answer["photos"]["items"]] == [False] * 3
    assert {p["reason"] for p in answer["photos"]["items"]} == {"not_in_archive"}
    assert answer["photos"]["not_imported"] == 3


async def test_a_photo_the_media_module_refuses_is_named_and_the_rest_imports(client):
    """A file that is no image (its md5 matching) is refused by the media module: named
    with the reason, the entries and the other photos imported all the same."""
    import hashlib

    document = dayone_document()
    bad = b"not an image at all"
    photo = document["entries"][4]["photos"][0]
    photo["md5"] = hashlib.md5(bad).hexdigest()
    files = {"Journal.json": dayone_bytes(document)}
    files.update({f"photos/{p.name}": p.read_bytes() for p in PHOTOS})
    files[f"photos/{photo['md5']}.{photo['type']}"] = bad
    answer = await upload(client, zipped(files))
    assert answer["imported"] == 5
    refused = [p for p in answer["photos"]["items"] if not p["imported"]]
    assert [(p["name"], p["reason"]) for p in refused] == [
        (f"{photo['md5']}.{photo['type']}", "not_an_image")]
    assert answer["photos"]["imported"] == 2 and answer["notes"] == ["1 photo not imported"]


# --- archives that are not what they claim ------------------------------------------------------

@pytest.mark.parametrize("name", [".", "../2025-03-14.md", "/etc/2025-03-14.md",
                                  "tagebuch/../../2025-03-14.md", "C:/2025-03-14.md",
                                  "tagebuch\\2025-03-14.md"])
async def test_a_member_name_that_climbs_out_refuses_the_zip(client, name):
    answer = await upload(client, zipped({name: b"Text"}), status=400)
    assert "unsafe name" in answer["error"]["message"]


async def test_a_zip_bomb_is_refused_before_it_is_unpacked(client, caplog):
    bomb = zipped({"2025-03-14.md": b"a" * (40 << 20)})
    assert len(bomb) < 100_000
    answer = await upload(client, bomb, status=400)
    assert "packs" in answer["error"]["message"]
    assert "diary import refused: a member packed too tightly" in caplog.messages


async def test_what_a_zip_unpacks_to_is_bounded_by_the_import_limit(make_settings,
                                                                    aiohttp_client, caplog):
    client = await aiohttp_client(create_app(make_settings(
        llm_provider="offline", import_max_bytes=4096), local_token=TOKEN))
    files = {f"2025-03-{day:02d}.md": ("Ein Tag. " * 60).encode() for day in range(1, 11)}
    body = zipped(files)
    assert len(body) < 4096
    answer = await upload(client, body, status=400)
    assert "import_max_bytes" in answer["error"]["message"]
    [warning] = [r for r in caplog.records if r.getMessage().startswith("diary import refused")]
    assert warning.levelname == "WARNING" and warning.fields["setting"] == "import_max_bytes"
    response = await client.post(ROUTE, data=b"{" + b" " * 5000, headers=AUTH)
    assert response.status == 413
    assert (await response.json())["error"]["code"] == "too_large"


async def test_a_day_longer_than_an_entry_may_be_is_refused_whole(make_settings,
                                                                  aiohttp_client):
    client = await aiohttp_client(create_app(make_settings(
        llm_provider="offline", max_message_chars=250), local_token=TOKEN))
    answer = await upload(client, DAYONE_JSON, status=400)
    assert answer["error"]["message"].startswith("entries[2] (2025-07-02): the entry of "
                                                 "2025-07-02 would have")
    assert await (await client.get("/api/journal/days", headers=AUTH)).json() == []


async def test_something_that_is_no_diary_is_refused(client):
    for body in (b"hello", zipped({"notes.txt": b"hi"}), b"PK\x03\x04broken"):
        answer = await upload(client, body, status=400)
        assert answer["error"]["code"] == "invalid_diary"


# --- Markdown -----------------------------------------------------------------------------------

async def test_a_zip_of_markdown_files_becomes_one_entry_per_day(client):
    answer = await upload(client, markdown_zip())
    assert answer["source"] == "markdown"
    assert [e["date"] for e in answer["entries"]] == MARKDOWN_DAYS
    assert answer["photos"]["found"] == 0 and answer["notes"] == []
    stored = await entries(client)
    assert stored["2025-03-14"]["text"] == ("Erster warmer Tag. Mit Jonas am Fluss, Eis "
                                            "gegessen.\n\nAbends lange telefoniert.")
    assert stored["2025-03-15"]["text"] == (
        "# Wanderung im Muldental\n\nZwölf Kilometer, die Knie sagen Bescheid. Überall "
        "Buschwindröschen.\n\nTags: Wandern, Frühling")
    # No date in its name: the front matter's.
    assert stored["2025-03-16"]["text"].endswith("„Die Wand“ zu Ende.\n\nTags: Zuhause")
    assert all(e["versions"][0]["origin"] == "import" for e in stored.values())
    again = await upload(client, markdown_zip())
    assert (again["imported"], again["skipped"]) == (0, 3)


async def test_markdown_files_of_one_day_join_in_name_order(client):
    body = zipped({"b/2025-03-14 abends.md": b"Abends.", "a/2025-03-14.md": b"Morgens.",
                   "2025-03-15.md": b"Tag zwei."})
    await upload(client, body)
    stored = await entries(client)
    assert stored["2025-03-14"]["text"] == f"Morgens.{ITEM_BREAK}Abends."


async def test_one_markdown_file_takes_its_day_from_its_name(client):
    answer = await upload(client, "Nur ein Tag.".encode(), name="2025-01-02.md")
    assert [e["date"] for e in answer["entries"]] == ["2025-01-02"]


@pytest.mark.parametrize(("files", "message"), [
    ({"2025-03-14.md": b"ok", "notizen.md": b"Ohne Tag."},
     "notizen.md: no day: name the file YYYY-MM-DD.md"),
    ({"x.md": b"---\ndate: 14.03.2025\n---\nText"},
     "x.md: front matter date '14.03.2025' is not a day"),
    ({"2025-02-30.md": b"Text"}, "2025-02-30.md: 2025-02-30 in the file name is not a day"),
    ({"2025-03-14.md": b"---\ntags: [a]\nText ohne Ende"}, "front matter (---) is not closed"),
    ({"2025-03-14.md": b"\xff\xfeT"}, "2025-03-14.md: not UTF-8 text"),
    ({"2025-03-14.md": b"---\ntitle: \n---\n   "},
     "2025-03-14.md (2025-03-14): the file has no text"),
])
async def test_a_bad_markdown_file_is_named_and_nothing_is_written(client, files, message):
    answer = await upload(client, zipped({"2025-03-13.md": b"Davor.", **files}), status=400)
    assert message in answer["error"]["message"]
    assert await (await client.get("/api/journal/days", headers=AUTH)).json() == []


async def test_a_purged_imported_entry_comes_back_with_the_next_import(client):
    answer = await upload(client, markdown_zip())
    entry_id = answer["entries"][0]["entry_id"]
    assert (await client.delete(f"/api/journal/entries/{entry_id}", headers=AUTH)).status == 204
    assert (await client.delete(f"/api/journal/trash/{entry_id}", headers=AUTH)).status == 204
    again = await upload(client, markdown_zip())
    assert [e["date"] for e in again["entries"]] == ["2025-03-14"]
    assert again["skipped"] == 2


async def test_an_imported_entry_survives_the_journal_export_and_its_import(client):
    await upload(client, markdown_zip())
    document = await (await client.get("/api/exports/journal?format=json",
                                       headers=AUTH)).json()
    assert {v["origin"] for e in document["entries"] for v in e["versions"]} == {"import"}
    again = await (await client.post("/api/imports", headers=AUTH,
                                     data=json.dumps(document))).json()
    assert (again["imported"], again["skipped"]) == (0, 3)


# --- the command line ---------------------------------------------------------------------------

def test_the_cli_imports_a_folder_and_a_day_one_zip_once(tmp_path, data_dir, in_store, capsys):
    data = data_dir
    assert main(["--data-dir", str(data), "import-diary", str(MARKDOWN)]) == 0
    assert "imported 3, skipped 0 already present (markdown; 3 new entries)" in \
        capsys.readouterr().out
    assert main(["--data-dir", str(data), "import-diary", str(MARKDOWN)]) == 0
    assert "imported 0, skipped 3" in capsys.readouterr().out
    archive = tmp_path / "Journal.zip"
    archive.write_bytes(dayone_zip())
    assert main(["--data-dir", str(data), "import-diary", str(archive)]) == 0
    printed = capsys.readouterr().out
    # 2025-03-14 came from the Markdown folder already: its Day One entries are not taken.
    assert "imported 3, skipped 0 already present (dayone; 3 new entries)" in printed
    assert "3 photos imported" in printed and "not imported" not in printed.split("day")[0]
    assert "day has an entry already: 2025-03-14" in printed
    with in_store() as conn:  # the store the CLI wrote, on the test's engine
        assert [tuple(r) for r in conn.execute(
            "SELECT source, COUNT(*) FROM journal_imports GROUP BY source ORDER BY source")] \
            == [("dayone", 3), ("markdown", 3)]
        assert [tuple(r) for r in conn.execute(
            "SELECT DISTINCT origin FROM journal_entry_versions")] == [("import",)]


def test_the_cli_refuses_a_bad_diary_with_exit_2_and_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "Journal.json"
    bad.write_bytes(_mutated(3, timeZone="Nowhere/Else"))
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "import-diary", str(bad)]) == 2
    assert "entries[3]: timeZone 'Nowhere/Else' is not a time zone" in capsys.readouterr().err
    database = data / DATABASE_FILE
    assert not database.exists() or sqlite3.connect(database).execute(
        "SELECT COUNT(*) FROM journal_entries").fetchone() == (0,)
    assert main(["--data-dir", str(data), "import-diary", str(tmp_path / "missing")]) == 2


def test_the_cli_reads_no_link_out_of_the_folder(tmp_path, capsys):
    folder = tmp_path / "diary"
    folder.mkdir()
    outside = tmp_path / "2025-01-01.md"
    outside.write_text("Fremd.")
    (folder / "2025-01-01.md").symlink_to(outside)
    (folder / "2025-01-02.md").write_text("Eigen.")
    (folder / ".2025-01-03.md").write_text("Versteckt.")
    assert main(["--data-dir", str(tmp_path / "data"), "import-diary", str(folder)]) == 0
    assert "imported 1, skipped 0" in capsys.readouterr().out


# --- the schema and the escapes -----------------------------------------------------------------

def test_the_migration_keeps_every_version_and_its_refs(tmp_path: Path):
    conn = database_before(tmp_path / "old.db", "m012_diary_imports")
    with conn:
        conn.execute("INSERT INTO journal_spaces VALUES ('s', 'local', 'user', 0)")
        conn.execute("INSERT INTO journal_days (day_id, space_id, calendar_date, created_at) "
                     "VALUES ('d', 's', '2026-01-01', 0)")
        conn.execute("INSERT INTO journal_entries VALUES ('e', 'd', 'v2', 0, NULL)")
        conn.execute("INSERT INTO journal_entry_versions VALUES "
                     "('v1', 'e', 1, 'draft', 'Erst.', 'r', 1), ('v2', 'e', 2, 'edit', 'Dann.', NULL, 2)")
        conn.execute("INSERT INTO journal_entry_version_source_refs VALUES "
                     "('v1', 0, 'c', 'm1'), ('v2', 0, 'c', 'm1')")
    from app.storage.migrations import apply_migrations
    assert "m012_diary_imports" in apply_migrations(conn)
    assert [tuple(r) for r in conn.execute("SELECT version_id, seq, origin, text FROM "
                                           "journal_entry_versions ORDER BY seq")] == [
        ("v1", 1, "draft", "Erst."), ("v2", 2, "edit", "Dann.")]
    assert conn.execute("SELECT COUNT(*) FROM journal_entry_version_source_refs").fetchone()[0] == 2
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    with pytest.raises(sqlite3.IntegrityError):  # the refs still hold to their versions
        with conn:
            conn.execute("INSERT INTO journal_entry_version_source_refs VALUES ('x', 0, 'c', 'm')")
    with conn:
        conn.execute("INSERT INTO journal_entry_versions (version_id, entry_id, seq, origin, "
                     "text, draft_id, created_at) VALUES ('v3', 'e', 3, 'import', 'Neu.', NULL, 3)")


PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[]^_`{|}~"


@given(st.text(alphabet=st.characters(blacklist_characters="\\",
                                      blacklist_categories=("Cs",)), max_size=60))
def test_day_one_escapes_undo_to_what_was_written(text):
    escaped = "".join(f"\\{c}" if c in PUNCTUATION else c for c in text)
    assert unescape(escaped) == text


def test_a_photo_link_is_kept_as_written():
    link = "![](dayone-moment://AB_12-cd)"
    assert unescape(f"Hier\\! {link} Dort\\.") == f"Hier! {link} Dort."


def test_the_sample_is_what_day_one_writes():
    """The sample holds what the tests rely on: entries of one day, photos, tags, unicode,
    a multi-line text, and a zip Day One's way."""
    document = dayone_document()
    dates = [e["creationDate"][:10] for e in document["entries"]]
    assert len(dates) - len(set(dates)) == 1
    assert sum(len(e.get("photos", [])) for e in document["entries"]) == len(PHOTOS) == 3
    with zipfile.ZipFile(__import__("io").BytesIO(dayone_zip())) as archive:
        assert sorted(archive.namelist())[0] == "Journal.json"


# --- U+0000, which PostgreSQL cannot store -------------------------------------------------------

async def test_a_markdown_file_holding_nul_refuses_the_import_naming_it(client):
    body = zipped({"2025-03-14.md": "Heute war es gut.".encode(),
                   "2025-03-15.md": "Ich ging\x00 spazieren.".encode()})
    answer = await upload(client, body, status=400)
    assert answer["error"]["message"].startswith("2025-03-15.md: ")
    assert "U+0000" in answer["error"]["message"]
    assert await entries(client) == {}


async def test_a_day_one_entry_holding_nul_refuses_the_import_naming_it(client):
    document = dayone_document()
    document["entries"][1]["text"] = "Am See\x00"
    answer = await upload(client, dayone_bytes(document), status=400)
    assert "entries[1]" in answer["error"]["message"]
    assert "U+0000" in answer["error"]["message"]
    assert await entries(client) == {}
