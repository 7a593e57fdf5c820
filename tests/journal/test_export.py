"""The journal exporter (app/backup/journal_export.py): entries with every version as JSON and
Markdown, from the API and the CLI, and their import into another install without
duplicates; the backup round trip keeps the journal."""

from __future__ import annotations

import io
import json
import zipfile

import msgspec
import pytest

from app.core.settings import defaults
from app.wiring.cli import main
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN


async def make_entries(client) -> list[dict]:
    made = []
    for date, text in (("2026-03-01", "Ich war im Park."), ("2026-03-02", "Regen. Buch gelesen.")):
        response = await client.post("/api/journal/entries", json={"date": date, "text": text},
                                     headers=AUTH)
        assert response.status == 201, await response.text()
        made.append(await response.json())
    edited = await client.put(f"/api/journal/entries/{made[0]['entry_id']}",
                              json={"text": "Ich war mit Anna im Park."}, headers=AUTH)
    assert edited.status == 200
    return made


async def entry_view(client, entry_id: str) -> dict:
    response = await client.get(f"/api/journal/entries/{entry_id}", headers=AUTH)
    assert response.status == 200
    return await response.json()


async def test_journal_export_and_import_into_another_install(make_settings, aiohttp_client,
                                                              tmp_path):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    made = await make_entries(client)
    exported = await (await client.get("/api/exports/journal?format=json", headers=AUTH)).read()
    document = json.loads(exported)
    assert document["kind"] == "novaberg.journal"
    assert [e["date"] for e in document["entries"]] == ["2026-03-01", "2026-03-02"]
    assert [v["text"] for v in document["entries"][0]["versions"]] == [
        "Ich war im Park.", "Ich war mit Anna im Park."]
    markdown = await (await client.get("/api/exports/journal?format=md&from=2026-03-02",
                                       headers=AUTH)).text()
    assert "## 2026-03-02" in markdown and "Regen. Buch gelesen." in markdown
    assert "2026-03-01" not in markdown

    other = tmp_path / "other"
    other.mkdir()
    second = await aiohttp_client(create_app(defaults(data_dir=str(other), llm_provider="offline"),
                                             local_token=TOKEN))
    first = await (await second.post("/api/imports", data=exported, headers=AUTH)).json()
    assert first == {"kind": "novaberg.journal", "imported": 2, "skipped": 0}
    again = await (await second.post("/api/imports", data=exported, headers=AUTH)).json()
    assert again == {"kind": "novaberg.journal", "imported": 0, "skipped": 2}
    for entry in made:
        assert await entry_view(second, entry["entry_id"]) == await entry_view(
            client, entry["entry_id"])


async def test_cli_journal_export_one_file_per_entry(make_settings, aiohttp_client, data_dir,
                                                     tmp_path, capsys):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    await make_entries(client)
    await client.close()
    out = tmp_path / "journal"
    out.mkdir()
    assert main(["--data-dir", str(data_dir), "export", "journal", "--out", str(out)]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == ["2026-03-01.md", "2026-03-02.md"]
    assert (out / "2026-03-01.md").read_text() == "# 2026-03-01\n\nIch war mit Anna im Park.\n"


# The backup BGSAVEs and the restore loads the data dir's own embedded Redis (tests/conftest.py).
@pytest.mark.own_redis
async def test_backup_and_restore_keep_the_journal(make_settings, aiohttp_client, data_dir):
    settings = make_settings(llm_provider="offline")
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    made = await make_entries(client)

    async def journal_view(c) -> dict:
        view = {"days": await (await c.get("/api/journal/days", headers=AUTH)).json()}
        for entry in made:
            view[entry["entry_id"]] = await entry_view(c, entry["entry_id"])
        return view

    before = await journal_view(client)
    backup = await (await client.post("/api/backups", headers=AUTH)).json()
    assert backup["counts"]["entries"] == 2
    await client.post("/api/journal/entries", json={"date": "2026-03-05", "text": "Danach."},
                      headers=AUTH)
    await client.close()

    assert main(["--data-dir", str(data_dir), "restore", backup["path"], "--yes"]) == 0
    restarted = await aiohttp_client(create_app(settings, local_token=TOKEN))
    assert await journal_view(restarted) == before


async def test_the_journals_own_export_imports_too(make_settings, aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    made = await make_entries(client)
    own = await (await client.get("/api/journal/export?format=json", headers=AUTH)).read()
    other = tmp_path / "other"
    other.mkdir()
    second = await aiohttp_client(create_app(defaults(data_dir=str(other), llm_provider="offline"),
                                             local_token=TOKEN))
    result = await (await second.post("/api/imports", data=own, headers=AUTH)).json()
    assert result == {"kind": "novaberg.journal", "imported": 2, "skipped": 0}
    entry = await entry_view(second, made[0]["entry_id"])
    assert entry["text"] == "Ich war mit Anna im Park."
    again = await (await second.post("/api/imports", data=own, headers=AUTH)).json()
    assert again["imported"] == 0


async def test_the_page_export_one_file_per_entry_names_them_as_the_cli_does(
        make_settings, aiohttp_client, data_dir, tmp_path):
    """Issue 22: the page's export (Markdown or JSON, one file or one per entry as a zip)
    is the CLI's: the same exporter, the same file names; the words in the user's language."""
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    made = await make_entries(client)

    async def zipped(query: str) -> dict[str, str]:
        response = await client.get(f"/api/exports/journal?{query}", headers=AUTH)
        assert response.status == 200, await response.text()
        assert response.content_type == "application/zip"
        assert 'filename="novaberg-journal.zip"' in response.headers["Content-Disposition"]
        with zipfile.ZipFile(io.BytesIO(await response.read())) as archive:
            return {name: archive.read(name).decode() for name in archive.namelist()}

    german = await zipped("format=md&per=entry&lang=de")
    assert german == {"2026-03-01.md": "# Sonntag, 1. März 2026\n\nIch war mit Anna im Park.\n",
                      "2026-03-02.md": "# Montag, 2. März 2026\n\nRegen. Buch gelesen.\n"}
    english = await zipped("format=md&per=entry&lang=en")
    assert english["2026-03-01.md"].startswith("# Sunday, March 1, 2026\n")
    as_json = await zipped("format=json&per=entry")
    await client.close()

    for fmt, expected, language in (("md", german, ["--language", "de"]),
                                    ("json", as_json, [])):
        out = tmp_path / f"cli-{fmt}"
        out.mkdir()
        assert main(["--data-dir", str(data_dir), "export", "journal", "--format", fmt,
                     "--out", str(out), *language]) == 0
        written = {p.name: p.read_text() for p in out.iterdir()}
        assert sorted(written) == sorted(expected)
        if fmt == "md":
            assert written == expected
        else:  # the same entries; only `exported_at` may differ between the two exports
            assert [json.loads(t)["entries"] for t in written.values()] == [
                json.loads(expected[name])["entries"] for name in written]

    one = json.loads(as_json["2026-03-01.json"])
    assert one["kind"] == "novaberg.journal" and [e["entry_id"] for e in one["entries"]] == [
        made[0]["entry_id"]]
    other = tmp_path / "other"
    other.mkdir()
    second = await aiohttp_client(create_app(defaults(data_dir=str(other), llm_provider="offline"),
                                             local_token=TOKEN))
    result = await (await second.post("/api/imports", data=as_json["2026-03-01.json"].encode(),
                                      headers=AUTH)).json()
    assert result == {"kind": "novaberg.journal", "imported": 1, "skipped": 0}
    assert (await entry_view(second, made[0]["entry_id"]))["text"] == "Ich war mit Anna im Park."


async def test_the_one_file_markdown_export_speaks_the_users_language(make_settings,
                                                                      aiohttp_client):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    await make_entries(client)

    async def markdown(query: str) -> str:
        response = await client.get(f"/api/exports/journal?format=md{query}", headers=AUTH)
        assert response.status == 200
        return await response.text()

    assert (await markdown("&lang=de")).startswith(
        "# Tagebuch\n\n## Sonntag, 1. März 2026\n\nIch war mit Anna im Park.\n")
    assert (await markdown("&lang=en")).startswith("# Journal\n\n## Sunday, March 1, 2026\n")
    assert (await markdown("")).startswith("# Journal\n\n## 2026-03-01\n")  # as before
    for query, code in (("&lang=fr", "invalid_language"), ("&per=day", "invalid_export")):
        response = await client.get(f"/api/exports/journal?format=md{query}", headers=AUTH)
        assert response.status == 400
        assert (await response.json())["error"]["code"] == code
    chat = await client.get("/api/exports/chat?format=md&per=entry", headers=AUTH)
    assert chat.status == 400 and (await chat.json())["error"]["code"] == "invalid_export"


async def test_the_journals_own_export_is_streamed_with_the_same_bytes(make_settings,
                                                                       aiohttp_client):
    """`GET /api/journal/export` goes out in chunks (chunked transfer, read row by row on a
    reader thread); its bytes are what the whole-journal serialisers give."""
    from app.api.app_keys import DB
    from app.journal import export
    from app.journal.store import JournalStore

    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    await make_entries(client)
    gone = await client.post("/api/journal/entries", json={"date": "2026-03-03", "text": "Weg."},
                             headers=AUTH)
    deleted = await client.delete(f"/api/journal/entries/{(await gone.json())['entry_id']}",
                                  headers=AUTH)
    assert deleted.status == 204
    entries = await JournalStore(client.server.app[DB]).entries("local", deleted=False)
    assert [e.date for e in entries] == ["2026-03-01", "2026-03-02"]
    exported = [export.ExportedEntry(e.entry_id, e.date, e.text, e.current_version_id)
                for e in entries]
    for fmt, whole, content_type in (
            ("json", json.dumps(msgspec.to_builtins(export.as_json(exported))),
             "application/json"),
            ("md", export.as_markdown(exported), "text/markdown")):
        response = await client.get(f"/api/journal/export?format={fmt}", headers=AUTH)
        assert response.status == 200
        assert response.headers["Transfer-Encoding"] == "chunked"
        assert response.content_type == content_type and response.charset == "utf-8"
        assert response.headers["Content-Disposition"] == f'attachment; filename="journal.{fmt}"'
        assert await response.text() == whole
    assert "Ich war mit Anna im Park." in whole and "Weg." not in whole
