"""The settings dialog's backup section ("Sicherung") in a real browser: take a backup, see it
listed, download this conversation, import a JSON export — in German and English; a named
user of a headless server sees no backup controls (a backup holds everyone's data)."""

from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import character_bubbles, screenshot, send, wait_connected
from tests.fakemodel import Reply

pytestmark = pytest.mark.browser


def open_backup_section(page, settings_label: str):
    page.get_by_role("button", name=settings_label, exact=True).click()
    section = page.locator("#backup-section")
    expect(section).to_be_visible()
    return section


def test_sicherung_backs_up_lists_downloads_and_imports(nova, fake, open_chat, tmp_path):
    fake.always("responder", Reply("Schön, dass du da bist."))
    page = open_chat(nova, locale="de-DE")
    send(page, "Heute war ein guter Tag.")
    expect(character_bubbles(page)).to_have_count(1)

    section = open_backup_section(page, "Einstellungen")
    expect(section.get_by_role("heading", name="Sicherung")).to_be_visible()
    expect(section.locator("#backup-list")).to_have_text("Noch keine Sicherung.")
    section.get_by_role("button", name="Jetzt sichern").click()
    expect(section.locator("#backup-status")).to_contain_text("Sicherung gespeichert: novaberg-backup-")
    expect(section.locator("#backup-list li")).to_have_count(1)
    expect(section.locator("#backup-list li")).to_contain_text("2 Nachrichten")
    assert len(list((nova.data_dir / "backups").iterdir())) == 1
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
        "0 Nachrichten importiert (2 waren schon da).")
    # A conversation with a reminder: the download carries it, the import names each part.
    assert nova.api("POST", "/api/characters/nova/reminders",
                    {"text": "Zahnarzt", "due_at": time.time() + 3600})[0] == 201
    with page.expect_download() as info:
        section.get_by_role("link", name="Herunterladen").click()
    info.value.save_as(path)
    assert [r["text"] for r in json.loads(path.read_text())["reminders"]] == ["Zahnarzt"]
    section.get_by_label("JSON-Export importieren").set_input_files(str(path))
    expect(section.locator("#backup-status")).to_have_text(
        "0 Nachrichten, 0 Listeneinträge und 0 Erinnerungen importiert (3 waren schon da).")
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
    section = open_backup_section(page, "Settings")
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
    section = open_backup_section(page, "Settings")
    expect(section.locator("#backup-admin")).to_be_hidden()
    expect(section.get_by_role("link", name="Download")).to_be_visible()
