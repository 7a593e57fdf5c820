"""Issue 21, item 2 in a real browser: the side panel crosses off, edits and renames list
items and lists, edits, marks done and deletes reminders, and snoozes or marks done one that
has come — removals with an undo for a few seconds instead of a dialog, sent when the time
runs out or when the page is closed meanwhile. German and English; desktop and 390 px."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import PHONE, character_bubbles, screenshot, send
from tests.procs import wait_for

pytestmark = pytest.mark.browser

UNDO_SECONDS = 6  # web/js/panels.js UNDO_MS
LISTS = "/api/characters/nova/lists"
REMINDERS = "/api/characters/nova/reminders"


def lists_of(nova) -> dict[str, list[str]]:
    status, lists = nova.api("GET", LISTS)
    assert status == 200
    return {item["name"]: item["items"] for item in lists}


def reminders_of(nova) -> dict[str, dict]:
    status, reminders = nova.api("GET", REMINDERS)
    assert status == 200
    return {r["text"]: r for r in reminders}


def wait_until(check, seconds: float = 15.0) -> None:
    assert wait_for(check, timeout=seconds, interval=0.2), "the server never got there"


def lists_panel(page: Page):
    return page.get_by_role("region", name="Listen")


def test_list_items_are_crossed_off_with_undo_edited_and_lists_renamed(start_nova, open_chat):
    nova = start_nova(offline=True)
    page = open_chat(nova, locale="de-DE")
    send(page, "Setz Milch, Eier und Brot auf die Einkaufsliste")
    expect(character_bubbles(page)).to_have_count(1)
    panel = lists_panel(page)
    items = panel.locator("li.list-item")
    expect(items).to_have_count(3)

    # Cross off, then undo: it comes back and the server never lost it.
    panel.get_by_role("button", name="Streichen: Eier").click()
    expect(items).to_have_count(2)
    undo = panel.get_by_role("button", name="Rückgängig: „Eier“ gestrichen.")
    expect(undo).to_be_visible()
    screenshot(page, "panel-undo")
    undo.click()
    expect(items).to_have_count(3)
    time.sleep(UNDO_SECONDS + 1)
    assert lists_of(nova) == {"Einkaufsliste": ["Milch", "Eier", "Brot"]}

    # Cross off and let the undo time run out: gone on the server too.
    panel.get_by_role("button", name="Streichen: Eier").click()
    expect(items).to_have_count(2)
    wait_until(lambda: lists_of(nova) == {"Einkaufsliste": ["Milch", "Brot"]})
    expect(panel.get_by_role("button", name="Rückgängig: „Eier“ gestrichen.")).to_have_count(0)

    panel.get_by_role("button", name="Bearbeiten: Brot").click()
    field = panel.get_by_role("textbox", name="Eintrag")
    expect(field).to_be_focused()
    field.fill("Vollkornbrot")
    panel.get_by_role("button", name="Speichern").click()
    expect(panel).to_contain_text("Liste geändert.")
    expect(items.nth(1)).to_contain_text("Vollkornbrot")
    assert lists_of(nova) == {"Einkaufsliste": ["Milch", "Vollkornbrot"]}

    # A change the server refuses says why and keeps the form.
    panel.get_by_role("button", name="Bearbeiten: Vollkornbrot").click()
    panel.get_by_role("textbox", name="Eintrag").fill("milch")
    panel.get_by_role("button", name="Speichern").click()
    expect(panel.locator("#lists-status")).to_have_class("form-status error")
    panel.get_by_role("button", name="Abbrechen").click()

    panel.get_by_role("button", name="Liste umbenennen: Einkaufsliste").click()
    panel.get_by_role("textbox", name="Name der Liste").fill("Wocheneinkauf")
    panel.get_by_role("button", name="Speichern").click()
    expect(panel.get_by_role("heading", name="Wocheneinkauf")).to_be_visible()
    assert lists_of(nova) == {"Wocheneinkauf": ["Milch", "Vollkornbrot"]}

    # A removal still waiting for its undo time is sent when the page goes away.
    panel.get_by_role("button", name="Liste löschen: Wocheneinkauf").click()
    expect(panel).to_contain_text("Noch keine Listen.")
    page.close()
    wait_until(lambda: lists_of(nova) == {})


def test_reminders_are_edited_marked_done_deleted_and_snoozed(start_nova, open_chat):
    nova = start_nova(offline=True)
    soon = time.time() + 2
    later = time.time() + 3 * 3600
    for text, due in (("Tee", soon), ("Blumen gießen", soon + 1), ("Zahnarzt", later),
                      ("Müll", later + 60)):
        assert nova.api("POST", REMINDERS, {"text": text, "due_at": due})[0] == 201
    page = open_chat(nova, locale="de-DE")
    panel = page.get_by_role("region", name="Erinnerungen")
    wait_until(lambda: {reminders_of(nova)[t]["status"] for t in ("Tee", "Blumen gießen")}
               == {"fired"})
    expect(character_bubbles(page)).to_have_count(2)  # each came as an impulse
    page.reload()
    rows = panel.locator("#reminders > li")
    tea = rows.filter(has_text="Tee")
    expect(tea).to_contain_text("jetzt fällig")
    screenshot(page, "panel-reminders")

    # One that has come: marked done (after its undo time), so it is done, not due.
    flowers = rows.filter(has_text="Blumen gießen")
    expect(flowers).to_contain_text("jetzt fällig")
    panel.get_by_role("button", name="Erledigt: Blumen gießen").click()
    expect(panel.locator("#reminders > li.done", has_text="Blumen gießen")).to_be_visible()
    wait_until(lambda: reminders_of(nova)["Blumen gießen"]["status"] == "done")

    # The one that has come: snoozed by ten minutes.
    panel.get_by_role("button", name="Noch mal erinnern in 10 Min.: Tee").click()
    expect(panel).to_contain_text("Ich erinnere dich noch mal an „Tee“")
    snoozed = reminders_of(nova)["Tee"]
    assert snoozed["status"] == "pending" and 500 < snoozed["due_at"] - time.time() < 700
    expect(tea).not_to_contain_text("jetzt fällig")

    panel.get_by_role("button", name="Bearbeiten: Zahnarzt").click()
    panel.get_by_role("textbox", name="Text der Erinnerung").fill("Zahnarzt Dr. Ohm")
    panel.get_by_role("button", name="Speichern").click()
    expect(panel).to_contain_text("Erinnerung geändert.")
    assert reminders_of(nova)["Zahnarzt Dr. Ohm"]["due_at"] == pytest.approx(later)

    panel.get_by_role("button", name="Erledigt: Zahnarzt Dr. Ohm").click()
    expect(panel.locator("#reminders > li.done", has_text="Zahnarzt Dr. Ohm")).to_be_visible()
    panel.get_by_role("button", name="Löschen: Müll").click()
    expect(rows.filter(has_text="Müll")).to_have_count(0)
    panel.get_by_role("button", name="Rückgängig: Erinnerung „Müll“ gelöscht.").click()
    expect(rows.filter(has_text="Müll")).to_have_count(1)
    wait_until(lambda: reminders_of(nova)["Zahnarzt Dr. Ohm"]["status"] == "done")
    assert reminders_of(nova)["Müll"]["status"] == "pending"

    panel.get_by_role("button", name="Löschen: Müll").click()
    wait_until(lambda: "Müll" not in reminders_of(nova))


def test_the_panel_in_english_and_at_phone_width(start_nova, open_chat):
    nova = start_nova(offline=True)
    assert nova.api("POST", REMINDERS, {"text": "Call mum about the weekend plans",
                                        "due_at": time.time() + 3600})[0] == 201
    page = open_chat(nova, locale="en-GB", viewport=PHONE)
    send(page, "Put oat milk, a very long item name that has to wrap on a phone and eggs "
               "on the shopping list")
    expect(character_bubbles(page)).to_have_count(1)
    page.get_by_role("button", name="Panels", exact=True).click()
    panel = page.get_by_role("region", name="Lists")
    expect(panel.locator("li.list-item")).to_have_count(3)
    panel.scroll_into_view_if_needed()
    screenshot(page, "panel-phone-lists-en")
    panel.get_by_role("button", name="Cross off: eggs").click()
    expect(panel.get_by_role("button", name="Undo: “eggs” crossed off.")).to_be_visible()
    reminders = page.get_by_role("region", name="Reminders")
    expect(reminders.get_by_role("button", name="Done: Call mum about the weekend plans")) \
        .to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    side = page.locator("#side")
    assert side.evaluate("node => node.scrollWidth <= node.clientWidth")
    screenshot(page, "panel-phone-en")
    wait_until(lambda: lists_of(nova) == {
        "shopping list": ["oat milk", "very long item name that has to wrap on a phone"]})
