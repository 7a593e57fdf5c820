"""Photos in a journal entry as a person adds them (issue 22 §4), in a real browser: choose a
file, see its thumbnail in the entry and in the calendar's day, reload — still there — a file
that is no photo refused in words, then remove it."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import expect

from tests.browser.helpers import screenshot
from tests.browser.test_journal_days import cal_day, german_date, open_journal

pytestmark = pytest.mark.browser

DAY = dt.date.today() - dt.timedelta(days=1)


def photo_file(folder: Path) -> Path:
    image = Image.new("RGB", (800, 600), (40, 120, 160))
    exif = Image.Exif()
    exif[0x8825] = {1: "N", 2: (52.0, 31.0, 12.0)}  # a location, to be removed
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif.tobytes())
    path = folder / "Am See.jpg"
    path.write_bytes(out.getvalue())
    return path


def open_day(page) -> None:
    open_journal(page)
    cal_day(page, DAY).click()
    expect(page.locator("#journal-day-title")).to_have_text(german_date(DAY))
    expect(page.locator("#journal-entry-heading")).to_have_text("Eintrag")


def thumbnail_shown(locator) -> bool:
    return locator.evaluate("img => img.complete && img.naturalWidth > 0")


def test_a_photo_is_added_shown_kept_and_removed(nova, open_chat, tmp_path):
    status, entry = nova.api("POST", "/api/journal/entries",
                             {"date": DAY.isoformat(), "text": "Ein Nachmittag am See."})
    assert status == 201
    page = open_chat(nova, locale="de-DE")
    open_day(page)
    expect(page.locator("#journal-photos-title")).to_have_text("Fotos")

    page.locator("#journal-photo-input").set_input_files(str(photo_file(tmp_path)))
    expect(page.locator("#journal-entry-status")).to_have_text("Foto hinzugefügt.")
    thumb = page.locator("#journal-photo-list .journal-photo-thumb")
    expect(thumb).to_have_count(1)
    expect(thumb).to_have_attribute("alt", "Am See.jpg")
    page.wait_for_function("() => { const i = document.querySelector('.journal-photo-thumb');"
                           " return i && i.complete && i.naturalWidth > 0; }")
    day_button = page.locator(f'#journal-calendar button[data-date="{DAY.isoformat()}"]')
    expect(day_button.locator("img.journal-cal-photo")).to_have_count(1)
    expect(day_button).to_have_attribute("aria-label", f"{german_date(DAY)}, Eintrag, Fotos: 1")
    screenshot(page, "journal-photo-added")

    # Reloaded, the photo is still there, in the entry and in the calendar.
    page.reload()
    open_day(page)
    expect(thumb).to_have_count(1)
    page.wait_for_function("() => { const i = document.querySelector('.journal-photo-thumb');"
                           " return i && i.complete && i.naturalWidth > 0; }")
    assert thumbnail_shown(day_button.locator("img.journal-cal-photo"))
    _, stored = nova.api("GET", f"/api/journal/entries/{entry['entry_id']}")
    [asset] = stored["media"]
    assert asset["name"] == "Am See.jpg" and asset["kind"] == "jpeg"

    # A file that is no photo is refused in the page's words; nothing is added.
    fake = tmp_path / "notiz.jpg"
    fake.write_text("kein Bild")
    page.locator("#journal-photo-input").set_input_files(str(fake))
    expect(page.locator("#journal-entry-status")).to_contain_text("die Datei ist kein Bild")
    expect(thumb).to_have_count(1)

    page.get_by_role("button", name="Am See.jpg entfernen").click()
    expect(page.locator("#journal-entry-status")).to_have_text("Foto entfernt.")
    expect(thumb).to_have_count(0)
    expect(day_button.locator("img.journal-cal-photo")).to_have_count(0)
    _, stored = nova.api("GET", f"/api/journal/entries/{entry['entry_id']}")
    assert stored["media"] == []
    assert nova.api("GET", asset["url"])[0] == 404
