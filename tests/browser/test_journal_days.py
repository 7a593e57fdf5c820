"""The journal as a person uses it (issue 22), in a real browser: a week of entries — a day
written by hand without any conversation, a chat day drafted without a model, a redraft
that becomes the entry's next version — the calendar with the keyboard and on a phone, the
export as the CLI writes it, and the trash's "delete for good", which asks first."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import zipfile

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import PHONE, character_bubbles, screenshot, send

pytestmark = pytest.mark.browser

TODAY = dt.date.today()  # the app's calendar day: its zone is the machine's here
WEEK = [TODAY - dt.timedelta(days=n) for n in range(6, 0, -1)]


def german_date(day: dt.date) -> str:
    from app.core.i18n import long_date

    return long_date(day, "de")


def import_day(nova, day: dt.date, lines: list[str]) -> None:
    messages = [{"role": "user", "text": text} for text in lines]
    status, body = nova.api("POST", "/api/journal/import",
                            {"date": day.isoformat(), "messages": messages})
    assert status == 201, body


def open_journal(page) -> None:
    page.locator("#view-journal").click()
    expect(page.locator("#journal-calendar button[data-date]").first).to_be_visible()


def word(name: str) -> re.Pattern[str]:
    """A class list holding `name`."""
    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")


def cal_day(page, day: dt.date):
    """The day's button, the calendar turned to its month (prev/next, as a person does)."""
    month = day.isoformat()[:7]
    for _ in range(24):
        shown = page.locator("#journal-calendar button[data-date]").first
        expect(shown).to_be_visible()
        at = shown.get_attribute("data-date")[:7]
        if at == month:
            break
        page.locator("#journal-month-prev" if at > month else "#journal-month-next").click()
        expect(page.locator(f'#journal-calendar button[data-date^="{at}"]')).to_have_count(0)
    return cal_button(page, day)


def cal_button(page, day: dt.date):
    """The day's button as the calendar shows it now."""
    return page.locator(f'#journal-calendar button[data-date="{day.isoformat()}"]')


def test_a_week_of_entries_as_a_person_writes_them(start_nova, open_chat):
    nova = start_nova(offline=True)  # no model server: the offline stand-in
    for day, lines in zip(WEEK[:3], (["Lange geschlafen, dann Wäsche."],
                                     ["Mit Mia telefoniert.", "Abends Suppe gekocht."],
                                     ["Regen den ganzen Tag."])):
        import_day(nova, day, lines)
        status, _ = nova.api("POST", "/api/journal/entries",
                             {"date": day.isoformat(), "text": " ".join(lines)})
        assert status == 201
    page = open_chat(nova, locale="de-DE")

    # A chat day: something told, a request the character carries out, a question to it.
    for text in ("Heute war ich im Park.", "Setz Milch auf die Einkaufsliste",
                 "Wie wird das Wetter morgen?", "Abends habe ich gelesen."):
        count = character_bubbles(page).count()
        send(page, text)
        expect(character_bubbles(page)).to_have_count(count + 1, timeout=20_000)

    open_journal(page)
    # The journal opens on the newest day: today, with its conversation, named as written.
    expect(page.locator("#journal-day-title")).to_have_text(german_date(TODAY))
    expect(page.locator(".journal-conversation h4")).to_have_text("Chat mit Nova")
    expect(cal_day(page, TODAY)).to_have_attribute("aria-current", "date")
    for day in WEEK[:3]:
        expect(cal_day(page, day)).to_have_class(word("has-entry"))

    page.locator("#journal-write").click()
    progress = page.locator("#journal-progress")
    expect(progress).to_have_text("Tag rekonstruiertEintrag geschriebenEntwurf fertig")
    draft = page.locator("#journal-draft-text")
    expect(draft).to_have_text("Heute war ich im Park.\n\nAbends habe ich gelesen.\n\n"
                               "Erledigt:\n- Setz Milch auf die Einkaufsliste",
                               use_inner_text=True)
    note = page.locator("#journal-fallback")
    expect(note).to_have_text("Ohne Sprachmodell: deine Zeilen des Tages, unverändert.")
    expect(page.locator("#journal-left-out")).to_have_text(
        "Nicht im Text: u3 (Fragen an Nova).")
    expect(page.locator(".journal-source")).to_have_text(["u1", "u2", "u3", "u4"])
    accept = page.locator("#journal-draft-accept")
    expect(accept).to_have_text("Als Eintrag übernehmen")
    screenshot(page, "journal-week-offline-draft")
    accept.click()
    expect(page.locator("#journal-entry-text")).to_have_value(
        "Heute war ich im Park.\n\nAbends habe ich gelesen.\n\n"
        "Erledigt:\n- Setz Milch auf die Einkaufsliste")
    expect(accept).to_be_hidden()  # that draft is the entry's current version now

    # A day without any conversation, written by hand ("Neuer Eintrag").
    quiet = WEEK[4]
    page.locator("#journal-new-date").fill(quiet.isoformat())
    page.locator("#journal-new-open").click()
    expect(page.locator("#journal-day-title")).to_have_text(german_date(quiet))
    expect(page.locator("#journal-no-conversation")).to_have_text(
        "An diesem Tag gab es kein Gespräch. Schreib deinen Eintrag hier von Hand.")
    expect(page.locator("#journal-write")).to_be_hidden()
    expect(page.locator("#journal-entry-heading")).to_have_text("Neuer Eintrag")
    expect(page.locator("#journal-entry-text")).to_be_focused()
    page.keyboard.type("Ein stiller Tag. Kein Gespräch, nur ein Spaziergang am Fluss.")
    page.locator("#journal-entry-save").click()
    expect(page.locator("#journal-entry-status")).to_have_text("Gespeichert.")
    status, day = nova.api("GET", f"/api/journal/days/{quiet.isoformat()}")
    assert day["conversations"] == [] and day["entry"]["versions"][0]["sources"] == []

    # Later the same day: one more line, and a new draft that starts from the entry.
    page.locator("#view-chat").click()
    count = character_bubbles(page).count()
    send(page, "Nachts noch Sterne geschaut.")
    expect(character_bubbles(page)).to_have_count(count + 1, timeout=20_000)
    open_journal(page)
    cal_day(page, TODAY).click()
    expect(page.locator("#journal-write")).to_have_text("Neuen Entwurf schreiben")
    include = page.locator("#journal-include-existing")
    expect(page.locator("#journal-include-box")).to_contain_text("Von meinem Eintrag ausgehen")
    expect(include).not_to_be_checked()  # off by default (seed 004)
    include.check()
    page.locator("#journal-write").click()
    expect(note).to_contain_text("Überarbeitet deinen Eintrag.")
    # Without a model the revision is the entry, then the lines it lacks; one done list.
    expect(draft).to_have_text("Heute war ich im Park.\n\nAbends habe ich gelesen.\n\n"
                               "Nachts noch Sterne geschaut.\n\n"
                               "Erledigt:\n- Setz Milch auf die Einkaufsliste",
                               use_inner_text=True)
    expect(accept).to_have_text("Als neue Fassung übernehmen")
    accept.click()
    versions = page.locator("#journal-versions li")
    expect(versions).to_have_count(2)
    expect(versions.first).to_contain_text("aus dem Entwurf")
    expect(page.locator("#journal-entry-text")).to_have_value(
        page.locator("#journal-draft-text").inner_text())
    screenshot(page, "journal-week-redraft")

    # The week in the calendar, on a desktop and on a phone.
    written = [*WEEK[:3], quiet, TODAY]
    for day in written:
        expect(cal_day(page, day)).to_have_class(word("has-entry"))
    cal_day(page, TODAY)
    expect(page.locator(".journal-day-button")).to_have_count(
        sum(1 for day in written if day.month == TODAY.month))
    page.evaluate("document.querySelector('.journal-main').scrollTop = 0")
    screenshot(page, "journal-week-desktop")
    phone = open_chat(nova, locale="de-DE", viewport=PHONE)
    open_journal(phone)
    expect(phone.locator("#journal-day-title")).to_have_text(german_date(TODAY))
    screenshot(phone, "journal-week-phone")
    # Nothing of the page is wider than the phone: the journal, nor the top bar above it
    # (in German, with "Abmelden" shown, its buttons wrap), nor the page itself.
    wide = phone.evaluate("""() => [...document.querySelectorAll('.topbar *, #journal-view *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
        .map((e) => `${e.tagName}#${e.id}.${e.className}`)""")
    assert wide == [], wide
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    cells = phone.locator("#journal-calendar button[data-date]")
    assert min(cells.nth(n).bounding_box()["width"] for n in range(cells.count())) >= 36
    phone.locator("#journal-draft").scroll_into_view_if_needed()
    screenshot(phone, "journal-week-phone-day")


def test_an_empty_journal_says_what_to_do_and_any_day_opens(nova, open_chat):
    page = open_chat(nova, locale="de-DE")
    open_journal(page)
    from app.core.i18n import MONTHS

    month = f"{MONTHS['de'][TODAY.month - 1]} {TODAY.year}"
    expect(page.locator("#journal-days-empty")).to_have_text(
        f"Im {month} steht noch nichts. Wähle einen Tag im Kalender und schreib einen "
        "Eintrag von Hand – oder sprich mit Nova: Aus einem Tag mit Gespräch macht "
        "„Eintrag schreiben“ einen Entwurf.")
    expect(page.locator("#journal-days-title")).to_be_hidden()
    # It opens on today, with nothing in it: the entry is written by hand.
    expect(page.locator("#journal-day-title")).to_have_text(german_date(TODAY))
    expect(cal_button(page, TODAY)).to_have_attribute("aria-current", "date")
    expect(page.locator("#journal-no-conversation")).to_be_visible()
    expect(page.locator("#journal-generate")).to_be_hidden()
    other = WEEK[0]
    cal_day(page, other).click()
    expect(page.locator("#journal-day-title")).to_have_text(german_date(other))
    expect(page.locator("#journal-entry-heading")).to_have_text("Neuer Eintrag")


def test_the_calendar_with_the_keyboard_in_english(nova, open_chat):
    import_day(nova, WEEK[2], ["Went swimming."])
    page = open_chat(nova)
    open_journal(page)
    title = page.locator("#journal-month-title")
    expect(page.locator("#journal-day-title")).to_have_text(
        WEEK[2].strftime("%A, %B ") + f"{WEEK[2].day}, {WEEK[2].year}")
    start = cal_day(page, WEEK[2])
    expect(start).to_have_attribute("tabindex", "0")  # the one tab stop
    assert page.locator('#journal-calendar button[tabindex="0"]').count() == 1
    expect(start).to_have_attribute("aria-label", re.compile("1 of your messages"))
    start.focus()
    page.keyboard.press("ArrowRight")
    after = WEEK[2] + dt.timedelta(days=1)
    expect(cal_button(page, after)).to_be_focused()
    page.keyboard.press("ArrowDown")
    week_later = after + dt.timedelta(days=7)
    expect(cal_button(page, week_later)).to_be_focused()  # maybe in the next month: it turned
    month_before = title.inner_text()
    page.keyboard.press("PageDown")
    expect(title).not_to_have_text(month_before)
    page.keyboard.press("PageUp")
    expect(title).to_have_text(month_before)
    expect(cal_button(page, week_later)).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#journal-day-title")).to_have_text(
        week_later.strftime("%A, %B ") + f"{week_later.day}, {week_later.year}")
    expect(page.locator("#journal-entry-heading")).to_have_text("New entry")
    page.locator("#journal-month-prev").click()
    page.locator("#journal-month-next").click()
    expect(title).to_have_text(f"{week_later:%B %Y}")


def test_export_downloads_what_the_cli_writes(nova, open_chat, tmp_path):
    for day, text in ((WEEK[0], "Erster Tag."), (WEEK[1], "Zweiter Tag.")):
        status, _ = nova.api("POST", "/api/journal/entries",
                             {"date": day.isoformat(), "text": text})
        assert status == 201
    page = open_chat(nova, locale="de-DE")
    open_journal(page)
    page.locator("#journal-export summary").click()
    page.get_by_role("radio", name="eine pro Eintrag (ZIP)").check()
    with page.expect_download() as caught:
        page.locator("#journal-export-download").click()
    download = caught.value
    assert download.suggested_filename == "novaberg-journal.zip"
    with zipfile.ZipFile(io.BytesIO(open(download.path(), "rb").read())) as archive:
        files = {name: archive.read(name).decode() for name in archive.namelist()}
    assert files == {f"{WEEK[0]}.md": f"# {german_date(WEEK[0])}\n\nErster Tag.\n",
                     f"{WEEK[1]}.md": f"# {german_date(WEEK[1])}\n\nZweiter Tag.\n"}

    page.get_by_role("radio", name="JSON").check()
    page.get_by_role("radio", name="eine Datei", exact=True).check()
    with page.expect_download() as caught:
        page.locator("#journal-export-download").click()
    document = json.loads(open(caught.value.path(), encoding="utf-8").read())
    assert caught.value.suggested_filename == "novaberg-journal.json"
    assert document["kind"] == "novaberg.journal"
    assert [e["date"] for e in document["entries"]] == [WEEK[0].isoformat(),
                                                       WEEK[1].isoformat()]


def test_delete_for_good_asks_first_and_the_keyboard_keeps_by_default(nova, open_chat):
    status, entry = nova.api("POST", "/api/journal/entries",
                             {"date": WEEK[3].isoformat(), "text": "Nicht mehr nötig."})
    assert status == 201
    assert nova.api("DELETE", f"/api/journal/entries/{entry['entry_id']}")[0] == 204
    page = open_chat(nova, locale="de-DE")
    open_journal(page)
    page.locator("#journal-trash-open").click()
    purge = page.locator(".journal-purge")
    expect(purge).to_have_text("Endgültig löschen")
    dialog = page.locator("#journal-purge-dialog")

    purge.click()
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(f"Der Eintrag vom {german_date(WEEK[3])}")
    expect(dialog.locator('button[value="cancel"]')).to_be_focused()  # keeping is the default
    screenshot(page, "journal-purge-dialog")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.locator("#journal-trash-list li")).to_have_count(1)
    purge.click()
    page.keyboard.press("Enter")  # on "Behalten"
    expect(dialog).to_be_hidden()
    assert len(nova.api("GET", "/api/journal/trash")[1]) == 1

    purge.click()
    page.keyboard.press("Tab")
    expect(page.locator("#journal-purge-confirm")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#journal-trash-list li")).to_have_count(0)
    expect(page.locator("#journal-trash-empty")).to_be_visible()
    assert nova.api("GET", "/api/journal/trash")[1] == []
    assert nova.api("GET", f"/api/journal/entries/{entry['entry_id']}")[0] == 404
