"""The writing profile page as a person uses it (issue 22 §5), in a real browser, German and
English, at a desktop's width and a phone's (390 px): the introduction, the profile's ids in the
user's words, free-text names for facets and traits, the copy package masked with its warning
(and unmasked only by choice), the versions' empty state, no English left in the German page."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import PHONE, screenshot
from tests.browser.test_phone import assert_fits

pytestmark = pytest.mark.browser

ENTRY = ("Heute habe ich lange mit Carla telefoniert, ihre neue Nummer ist 0171 2345678. "
         "Danach bin ich mit Carla Mustermann am Fluss spazieren gegangen.")
# What the German page must not show: English, and the profile's raw ids.
NOT_GERMAN = ("Review", "edited the core", "nothing to apply", "the result", "Core", "Trait",
              "autobiographical_journal", "kansho.profile_analysis_package", "core_edited")


def visible_text(page: Page) -> str:
    return page.evaluate("document.body.innerText")


def with_person_and_entry(nova) -> None:
    status, _ = nova.api("PUT", "/api/privacy/identities", {
        "people": [{"name": "Carla Mustermann", "aliases": ["Carla"]}]})
    assert status == 200
    status, _ = nova.api("POST", "/api/journal/entries", {"date": "2026-03-04", "text": ENTRY})
    assert status == 201


def test_the_german_page_introduces_itself_and_speaks_german_with_free_names(
        start_nova, open_profile):
    nova = start_nova(offline=True)
    page = open_profile(nova, locale="de-DE")
    expect(page.locator("#intro-title")).to_have_text("Wofür dieses Profil da ist")
    expect(page.locator("#intro-what")).to_contain_text("die Stimme deines Tagebuchs")
    expect(page.locator("#intro-start")).to_contain_text("So fängst du an")
    # No versions yet: an empty state that says what will be there, not a numbered "1.".
    expect(page.locator("#versions-empty")).to_be_visible()
    expect(page.locator("#versions-empty")).to_contain_text("Jede Änderung")
    expect(page.locator("#versions")).to_be_hidden()
    # The radio buttons are the size of their text (not the browser's smaller default).
    box = page.locator("input[name=governance][value=advising]").bounding_box()
    assert box is not None and 16 <= box["width"] <= 24 and 16 <= box["height"] <= 24, box
    # The ids are shown in German.
    options = page.locator("#trait-scope option")
    expect(options).to_have_text(["Kern (all dein Schreiben)", "Tagebuch (autobiografisch)"])

    # A facet named as a person names it: "Tagebuch" is accepted, its key derived.
    page.fill("#facet-name", "Tagebuch")
    page.fill("#facet-value", "Im Präteritum, kurze Absätze.")
    page.locator("#facet-form").get_by_role("button", name="Hinzufügen").click()
    facet = page.locator("#facets li[data-facet=tagebuch]")
    expect(facet).to_contain_text("Tagebuch")
    expect(facet).to_contain_text("Im Präteritum")
    # The journal's own facet is picked by its German name.
    page.fill("#facet-name", "Tagebuch (autobiografisch)")
    page.fill("#facet-value", "Warm, mit Uhrzeiten.")
    page.locator("#facet-form").get_by_role("button", name="Hinzufügen").click()
    expect(page.locator("#facets li[data-facet=autobiographical_journal]")).to_contain_text(
        "Tagebuch (autobiografisch)")

    # A trait named freely, in the facet's scope.
    page.fill("#trait-key", "Satzlänge")
    page.fill("#trait-value", "eher kurz")
    page.select_option("#trait-scope", "tagebuch")
    page.locator("#trait-form").get_by_role("button", name="Hinzufügen").click()
    row = page.locator("#traits tr[data-trait=satzlaenge]")
    expect(row).to_contain_text("Satzlänge")
    expect(row).to_contain_text("Tagebuch")
    expect(row).to_contain_text("von dir")

    page.fill("#core-value", "Knapp und trocken.")
    page.locator("#core-form").get_by_role("button", name="Speichern").click()
    expect(page.locator("#versions li")).to_have_count(4)
    expect(page.locator("#versions-empty")).to_be_hidden()
    versions = page.locator("#versions")
    expect(versions).to_contain_text("Facette „Tagebuch“ hinzugefügt")
    expect(versions).to_contain_text("Merkmal „Satzlänge“ hinzugefügt")
    expect(versions).to_contain_text("Kern bearbeitet")

    # A pasted answer with nothing to apply is refused in German.
    page.fill("#result-text", json.dumps({"kind": "kansho.profile_analysis_result",
                                          "format_version": 1, "mode": "review",
                                          "changes": [{"action": "keep", "key": "satzlaenge"}]}))
    page.get_by_role("button", name="Als Vorschlag übernehmen").click()
    expect(page.locator("#profile-status")).to_have_text(
        "Nicht gespeichert: die Antwort enthält keine Änderung, die sich auf dein Profil "
        "anwenden lässt")
    # The offline model's review, too.
    page.get_by_role("button", name="Modell fragen").click()
    expect(page.locator("#profile-status")).to_contain_text("Keine Änderung vorgeschlagen: die")

    # The masked copy package, with the page's plain word that it leaves the device.
    page.get_by_role("button", name="Prompt zum Kopieren erzeugen").click()
    expect(page.locator("#prompt-box")).to_be_visible()
    expect(page.locator("#leaves-machine")).to_contain_text("verlässt dieses Gerät")
    expect(page.locator("#prompt-masking")).to_contain_text("Maskiert")
    text = visible_text(page)
    for word in NOT_GERMAN:
        assert word not in text, word
    screenshot(page, "profile-people-de")


def test_the_copy_package_is_masked_with_its_warning_and_comes_back_with_the_names(
        start_nova, open_profile):
    nova = start_nova(offline=True)
    with_person_and_entry(nova)
    page = open_profile(nova)
    page.fill("#core-value", "Warm, with many names.")
    page.locator("#core-form").get_by_role("button", name="Save").click()
    expect(page.locator("#profile-lifecycle")).to_have_text("Confirmed")

    expect(page.locator("#leaves-machine")).to_contain_text("leaves this device")
    page.get_by_role("button", name="Create prompt to copy").click()
    masking = page.locator("#prompt-masking")
    expect(masking).to_have_text("Masked: 3 name(s) and number(s) replaced by placeholders. "
                                 "Only this device knows what they stand for.")
    prompt = page.locator("#prompt-text").input_value()
    for secret in ("Carla", "Mustermann", "0171", "2345678"):
        assert secret not in prompt, secret
    assert "[PERSON_1]" in prompt and "[PHONE_1]" in prompt
    # The package's id and JSON stay folded away until asked for.
    assert "kansho.profile_analysis_package" not in visible_text(page)
    page.get_by_text("Show the text that is copied").click()
    expect(page.locator("#prompt-text")).to_be_visible()
    screenshot(page, "profile-people-masked")

    # The pasted answer's placeholders come back as the names, here.
    package_id = json.loads(prompt.split("```json\n", 1)[1].rsplit("```", 1)[0])["package_id"]
    page.fill("#result-text", json.dumps({
        "kind": "kansho.profile_analysis_result", "format_version": 1, "mode": "review",
        "package_id": package_id, "changes": [{"action": "add", "key": "Names",
                                               "value": "calls [PERSON_1] by first name"}]}))
    page.get_by_role("button", name="Import as proposal").click()
    expect(page.locator("#profile-status")).to_have_text("Imported: 1 change(s) wait for you.")
    change = page.locator(".proposal .change")
    expect(change).to_contain_text("Add · Names: calls Carla")
    expect(change).not_to_contain_text("[PERSON")

    # Only by the user's explicit choice: the text as it is, with a plain warning.
    page.locator("#unmasked").check()
    page.get_by_role("button", name="Create prompt to copy").click()
    expect(masking).to_contain_text("Unmasked: this text carries your names and numbers")
    expect(masking).to_have_attribute("data-masked", "false")
    assert "Carla Mustermann" in page.locator("#prompt-text").input_value()


@pytest.mark.parametrize(("locale", "intro", "empty"), [
    ("de-DE", "Wofür dieses Profil da ist", "Noch keine Versionen"),
    ("en-US", "What this profile is for", "No versions yet"),
])
def test_the_page_fits_a_phone(start_nova, open_profile, locale, intro, empty):
    nova = start_nova(offline=True)
    with_person_and_entry(nova)
    page = open_profile(nova, locale=locale, viewport=PHONE)
    expect(page.locator("#intro-title")).to_have_text(intro)
    expect(page.locator("#versions-empty")).to_contain_text(empty)
    assert_fits(page, "the profile page")
    page.locator("#make-prompt").click()
    expect(page.locator("#prompt-box")).to_be_visible()
    expect(page.locator("#leaves-machine")).to_be_visible()
    page.locator("#prompt-details summary").click()
    assert_fits(page, "the profile page with the prompt open")
    page.locator("#facet-name").fill("Reisetagebuch – Sommer")
    page.locator("#facet-value").fill("Lockerer, viele Orte.")
    page.locator("#facet-form button[type=submit]").click()
    expect(page.locator("#facets li[data-facet=reisetagebuch_sommer]")).to_contain_text(
        "Reisetagebuch – Sommer")
    assert_fits(page, "the profile page with a facet")
    screenshot(page, f"profile-people-phone-{locale}")
