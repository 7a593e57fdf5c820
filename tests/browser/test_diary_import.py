"""A diary the user already has, imported in the journal page (issue 22 §6), in a real
browser: the Day One sample as Day One's zip → the answer (entries imported, their photos
imported), the newest imported day open with its entry; the same file again adds nothing;
a bad file is named and changes nothing."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.backup.diary_support import dayone_document, dayone_zip
from tests.browser.helpers import screenshot

pytestmark = pytest.mark.browser


def import_file(page, path) -> None:
    page.locator("#journal-diary-file").set_input_files(str(path))
    page.locator("#journal-diary-submit").click()


def test_a_day_one_export_imports_in_the_journal_page(start_nova, open_chat, tmp_path):
    nova = start_nova(offline=True)
    archive = tmp_path / "Journal.zip"
    archive.write_bytes(dayone_zip())
    page = open_chat(nova, locale="de-DE")
    page.locator("#view-journal").click()
    expect(page.locator("#journal-calendar button[data-date]").first).to_be_visible()
    summary = page.locator("#journal-diary summary")
    expect(summary).to_have_text("Tagebuch importieren")
    summary.click()

    import_file(page, archive)
    result = page.locator("#journal-diary-result li")
    expect(result).to_have_text(["5 Einträge übernommen", "3 Fotos übernommen"])
    # The newest imported day opens, its entry the Day One text (escapes undone).
    expect(page.locator("#journal-day-title")).to_have_text("Samstag, 5. Juli 2025")
    expect(page.locator("#journal-entry-text")).to_have_value(
        "東京に着いた 🌸 — Ramen um 18:00. Schön, wieder unterwegs zu sein.\n\n"
        "![](dayone-moment://0F1E2D3C4B5A69788796A5B4C3D2E1F0)\n\nTags: Urlaub, Japan")
    expect(page.locator("#journal-versions")).to_contain_text("importiert")
    expect(page.locator('#journal-calendar button[data-date="2025-07-03"]')).to_be_visible()
    screenshot(page, "diary-import")

    import_file(page, archive)
    expect(result).to_have_text(["0 Einträge übernommen", "5 übersprungen (schon da)"])

    bad = dayone_document()
    bad["entries"][3]["timeZone"] = "Mars/Olympus_Mons"
    bad["entries"].append({"uuid": "CC" * 16, "creationDate": "2025-08-01T10:00:00Z",
                           "text": "Neu."})
    broken = tmp_path / "Kaputt.json"
    broken.write_text(json.dumps(bad), encoding="utf-8")
    import_file(page, broken)
    status = page.locator("#journal-diary-status")
    expect(status).to_contain_text("Nicht importiert, nichts wurde geändert: die Datei ist kein "
                                   "lesbares Tagebuch")
    expect(status).to_contain_text("entries[3]: timeZone 'Mars/Olympus_Mons'")
    expect(page.locator("#journal-diary-result")).to_be_hidden()
    status_code, days = nova.api("GET", "/api/journal/days")
    assert status_code == 200 and "2025-08-01" not in {d["date"] for d in days}


def test_the_control_speaks_english_too(start_nova, open_chat):
    nova = start_nova(offline=True)
    page = open_chat(nova, locale="en-US")
    page.locator("#view-journal").click()
    expect(page.locator("#journal-diary summary")).to_have_text("Import a diary")
