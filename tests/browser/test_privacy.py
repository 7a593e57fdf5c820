"""The settings' Privacy tab, in a real browser: add, edit and remove people, a bad name
refused with nothing lost, the preview of what would leave the machine and why each part was
masked, German."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import screenshot, wait_connected

pytestmark = pytest.mark.browser


def open_panel(page):
    page.get_by_role("button", name="Settings").click()
    page.get_by_role("dialog", name="Settings").get_by_role("tab", name="Privacy").click()
    panel = page.get_by_role("tabpanel", name="Privacy")
    expect(panel).to_be_visible()
    return panel


def test_people_are_added_edited_removed_and_the_preview_masks_them(nova, open_chat):
    page = open_chat(nova)
    panel = open_panel(page)
    expect(page.locator("#privacy-empty")).to_be_visible()

    panel.get_by_role("button", name="Add person").click()
    expect(panel.get_by_label("Name of person 1")).to_be_focused()
    panel.get_by_label("Name of person 1").fill("Anna Schmidt")
    panel.get_by_label("Other names of person 1").fill("Anni, Nanni")
    panel.get_by_role("button", name="Add person").click()
    panel.get_by_label("Name of person 2").fill("Onkel August")
    panel.get_by_role("button", name="Save people").click()
    expect(page.locator("#privacy-status")).to_have_text("Saved. People: 2.")
    status, stored = nova.api("GET", "/api/privacy/identities")
    assert status == 200 and stored["people"] == [
        {"name": "Anna Schmidt", "aliases": ["Anni", "Nanni"]},
        {"name": "Onkel August", "aliases": []}]

    panel.get_by_label("Preview: type a text").fill(
        "anni ruft 0170/1234567 an, im August kommt Onkel August.")
    panel.get_by_role("button", name="Show what would leave").click()
    expect(page.locator("#privacy-preview-out")).to_have_text(
        "[PERSON_1] ruft [PHONE_1] an, im August kommt Onkel [PERSON_2].")
    expect(page.locator("#privacy-preview-count")).to_have_text("3 found and replaced:")
    expect(panel.get_by_role("list", name="What was masked, and why").get_by_role(
        "listitem")).to_have_text(["“anni” → [PERSON_1]: registered",
                                   "“0170/1234567” → [PHONE_1]: phone number",
                                   "“August” → [PERSON_2]: registered"])
    screenshot(page, "privacy-panel")

    # A name that is only a title is refused; what was stored stays.
    panel.get_by_label("Name of person 2").fill("Frau")
    panel.get_by_role("button", name="Save people").click()
    expect(page.locator("#privacy-status")).to_contain_text("Not saved:")
    assert nova.api("GET", "/api/privacy/identities")[1]["names"] == [
        "Anna Schmidt", "Anni", "Nanni", "Onkel August"]

    # Edit one, remove the other.
    panel.get_by_label("Name of person 2").fill("Onkel Gustav")
    panel.get_by_role("button", name="Remove person 1").click()
    panel.get_by_role("button", name="Save people").click()
    expect(page.locator("#privacy-status")).to_have_text("Saved. People: 1.")
    assert nova.api("GET", "/api/privacy/identities")[1]["names"] == ["Onkel Gustav"]

    page.reload()
    wait_connected(page)
    panel = open_panel(page)
    expect(panel.get_by_label("Name of person 1")).to_have_value("Onkel Gustav")
    expect(panel.locator(".privacy-person")).to_have_count(1)
    page.get_by_role("dialog", name="Settings").get_by_role("button", name="Close").click()
    expect(panel).to_be_hidden()


def test_the_panel_speaks_german(nova, open_chat):
    page = open_chat(nova, locale="de-DE")
    page.get_by_role("button", name="Einstellungen").click()
    page.get_by_role("tab", name="Privatsphäre").click()
    panel = page.get_by_role("tabpanel", name="Privatsphäre")
    expect(panel).to_be_visible()
    expect(panel.get_by_role("heading", name="Personen")).to_be_visible()
    expect(page.locator("#privacy-empty")).to_have_text("Noch keine Personen.")
    panel.get_by_role("button", name="Person hinzufügen").click()
    panel.get_by_label("Name von Person 1").fill("Herr Freitag")
    panel.get_by_role("button", name="Personen speichern").click()
    expect(page.locator("#privacy-status")).to_have_text("Gespeichert. Personen: 1.")
    panel.get_by_label("Vorschau: Text eingeben").fill("Am Freitag kommt Herr Freitag.")
    panel.get_by_role("button", name="Zeigen, was hinausginge").click()
    expect(page.locator("#privacy-preview-out")).to_have_text(
        "Am Freitag kommt Herr [PERSON_1].")
    expect(panel.get_by_role("list", name="Was ersetzt wurde, und warum").get_by_role(
        "listitem")).to_have_text(["„Freitag“ → [PERSON_1]: registriert"])
