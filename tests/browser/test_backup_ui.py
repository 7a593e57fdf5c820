"""The settings' tab "Backup & export" ("Sicherung & Export") in a real browser: take a backup,
see it listed (to the second, its size, its folder, the command that restores it), download
this conversation, import a JSON export told back as what it added — in German and English;
a named user of a headless server sees no backup controls (a backup holds everyone's data)."""

from __future__ import annotations

import json
import re
import shlex
import time

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import character_bubbles, screenshot, send, wait_connected
from tests.fakemodel import Reply

pytestmark = pytest.mark.browser


def open_backup_section(page, settings_label: str, tab_label: str):
    page.get_by_role("button", name=settings_label, exact=True).click()
    page.get_by_role("dialog", name=settings_label).get_by_role("tab", name=tab_label).click()
    section = page.get_by_role("tabpanel", name=tab_label)
    expect(section).to_be_visible()
    return section


def test_sicherung_backs_up_lists_downloads_and_imports(nova, fake, open_chat, tmp_path):
    fake.always("responder", Reply("Schön, dass du da bist."))
    page = open_chat(nova, locale="de-DE")
    send(page, "Heute war ein guter Tag.")
    expect(character_bubbles(page)).to_have_count(1)

    section = open_backup_section(page, "Einstellungen", "Sicherung & Export")
    expect(section.get_by_role("heading", name="Sicherung", exact=True)).to_be_visible()
    expect(section.locator("#backup-list")).to_have_text("Noch keine Sicherung.")
    expect(section.locator("#backup-folder")).to_have_text(f"Ordner: {nova.data_dir / 'backups'}")
    expect(section.locator("#backup-restore")).to_be_hidden()
    section.get_by_role("button", name="Jetzt sichern").click()
    expect(section.locator("#backup-status")).to_contain_text("Sicherung gespeichert: novaberg-backup-")
    expect(section.locator("#backup-list li")).to_have_count(1)
    # When to the second (today, in words), how many messages, how big in the locale's units.
    expect(section.locator("#backup-list li")).to_have_text(
        re.compile(r"^heute um \d\d:\d\d:\d\d — 2 Nachrichten, \d+(,\d)? kB$"))
    [folder] = (nova.data_dir / "backups").iterdir()
    # How to restore it, in one line: the command with this app's data dir.
    expect(section.locator("#backup-restore")).to_contain_text(
        "Zum Wiederherstellen der neuesten Novaberg beenden und ausführen:")
    command = section.locator("#backup-restore-command").text_content()
    assert shlex.split(command) == ["novaberg", "--data-dir", str(nova.data_dir), "restore", str(folder)]
    screenshot(page, "backup-section-de")

    # Download the conversation as JSON, as the user does: click, and the file arrives.
    section.get_by_label("Format").select_option("json")
    with page.expect_download() as info:
        section.get_by_role("link", name="Herunterladen").click()
    download = info.value
    assert download.suggested_filename == "novaberg-chat-nova.json"
    path = tmp_path / download.suggested_filename
    download.save_as(path)
    exported = json.loads(path.read_text())
    assert [m["text"] for m in exported["messages"]] == ["Heute war ein guter Tag.",
                                                         "Schön, dass du da bist."]

    # Importing it again adds nothing: the ids are kept.
    section.get_by_label("JSON-Export importieren").set_input_files(str(path))
    expect(section.locator("#backup-status")).to_have_text(
        "Nichts Neues: alles war schon da (2 Nachrichten).")
    # A conversation with a reminder: the download carries it, the import names each part.
    assert nova.api("POST", "/api/characters/nova/reminders",
                    {"text": "Zahnarzt", "due_at": time.time() + 3600})[0] == 201
    with page.expect_download() as info:
        section.get_by_role("link", name="Herunterladen").click()
    info.value.save_as(path)
    assert [r["text"] for r in json.loads(path.read_text())["reminders"]] == ["Zahnarzt"]
    section.get_by_label("JSON-Export importieren").set_input_files(str(path))
    expect(section.locator("#backup-status")).to_have_text(
        "Nichts Neues: alles war schon da (2 Nachrichten, 1 Erinnerung).")
    # A file that is not JSON is refused with a message, nothing written.
    bad = tmp_path / "notes.json"
    bad.write_text("keine Daten")
    section.get_by_label("JSON-Export importieren").set_input_files(str(bad))
    expect(section.locator("#backup-status")).to_have_text("Diese Datei ist kein JSON-Export.")


def test_backup_section_in_english_and_markdown_download(nova, fake, open_chat, tmp_path):
    fake.always("responder", Reply("Hello there."))
    page = open_chat(nova, locale="en-US")
    send(page, "Hi Nova")
    expect(character_bubbles(page)).to_have_count(1)
    section = open_backup_section(page, "Settings", "Backup & export")
    expect(section.get_by_role("heading", name="Backup", exact=True)).to_be_visible()
    expect(section.get_by_role("button", name="Back up now")).to_be_visible()
    with page.expect_download() as info:
        section.get_by_role("link", name="Download").click()
    path = tmp_path / "chat.md"
    info.value.save_as(path)
    text = path.read_text()
    assert text.startswith("# Conversation with nova") and "Hi Nova" in text


def test_a_named_user_sees_no_backup_controls(start_nova, new_context):
    nova = start_nova(offline=True, users={"anna": "correct horse battery"})
    context = new_context(locale="en-US")
    page = context.new_page()
    page.goto(nova.url + "/")
    page.get_by_label("User name").fill("anna")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(nova.url + "/")
    wait_connected(page)
    section = open_backup_section(page, "Settings", "Backup & export")
    expect(section.locator("#backup-admin")).to_be_hidden()
    expect(section.get_by_role("link", name="Download")).to_be_visible()


def memories_export(count: int) -> dict:
    """A memory export as `GET /api/exports/memories?format=json` writes one."""
    return {"kind": "novaberg.memories", "format_version": 1, "memories": [
        {"memory_id": f"{n:032x}", "character_id": "nova", "text": f"Du magst Tee Nummer {n}.",
         "kind": "preference", "importance": 0.6, "created_at": 1_764_000_000.0 + n,
         "refreshed_at": 1_764_000_000.0 + n} for n in range(count)]}


@pytest.mark.parametrize(("locale", "tab", "journal_done", "memories_done", "again"), [
    ("de-DE", "Sicherung & Export", "Importiert: 1 Tagebucheintrag.",
     "Importiert: 4 Erinnerungen an dich.", "Nichts Neues: alles war schon da (4 Erinnerungen an dich)."),
    ("en-US", "Backup & export", "Imported: 1 journal entry.",
     "Imported: 4 memories of you.", "Nothing new: everything was already here (4 memories of you)."),
])
def test_an_import_says_what_it_added_with_its_counts(start_nova, open_chat, tmp_path, locale, tab,
                                                     journal_done, memories_done, again):
    source = start_nova(offline=True)
    assert source.api("POST", "/api/journal/entries",
                      {"date": "2026-11-30", "text": "Ein langer Tag am See."})[0] == 201
    status, journal = source.api("GET", "/api/exports/journal?format=json")
    assert status == 200 and len(journal["entries"]) == 1
    journal_file, memories_file = tmp_path / "journal.json", tmp_path / "memories.json"
    journal_file.write_text(json.dumps(journal))
    memories_file.write_text(json.dumps(memories_export(4)))

    nova = start_nova(offline=True)
    page = open_chat(nova, locale=locale)
    section = open_backup_section(page, "Einstellungen" if locale == "de-DE" else "Settings", tab)
    field = section.locator("#import-file")
    field.set_input_files(str(journal_file))
    expect(section.locator("#backup-status")).to_have_text(journal_done)
    field.set_input_files(str(memories_file))
    expect(section.locator("#backup-status")).to_have_text(memories_done)
    field.set_input_files(str(memories_file))
    expect(section.locator("#backup-status")).to_have_text(again)
    assert len(nova.api("GET", "/api/characters/nova/memories")[1]) == 4
