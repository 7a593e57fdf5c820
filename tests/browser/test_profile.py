"""The writing profile page in a real browser: edit core, traits with lock toggles, governance,
the copy/paste review with per-change accept/reject, versions, German and English, light and
dark."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import screenshot

pytestmark = pytest.mark.browser


def test_the_profile_page_edits_reviews_and_keeps_versions(start_nova, open_profile):
    nova = start_nova(offline=True)
    page = open_profile(nova)
    expect(page.locator("#profile-lifecycle")).to_have_text("Not set up yet")
    expect(page.locator("input[name=governance][value=advising]")).to_be_checked()

    page.fill("#core-value", "Knapp und trocken.")
    page.get_by_role("button", name="Save").first.click()
    expect(page.locator("#profile-status")).to_have_text("Saved.")
    expect(page.locator("#profile-lifecycle")).to_have_text("Confirmed")

    page.fill("#trait-key", "humor")
    page.fill("#trait-value", "selbstironisch")
    page.locator("#trait-form").get_by_role("button", name="Add").click()
    row = page.locator("#traits tr[data-trait=humor]")
    expect(row).to_contain_text("selbstironisch")
    expect(row).to_contain_text("yours")
    expect(row).to_contain_text("Humour")  # the seed's key in the page's words
    row.get_by_role("checkbox", name="Locked: Humour").check()
    expect(page.locator("#versions li")).to_have_count(3)
    status, body = nova.api("GET", "/api/profile")
    assert body["traits"][0]["locked"] is True

    page.locator("input[name=governance][value=frozen]").check()
    expect(page.locator("#governance-help")).to_contain_text("only you change")
    assert nova.api("GET", "/api/profile")[1]["governance"] == "frozen"

    # Copy/paste: the prompt carries the package; the pasted answer becomes a proposal.
    page.get_by_role("button", name="Create prompt to copy").click()
    expect(page.locator("#prompt-box")).to_be_visible()
    assert "kansho.profile_analysis_package" in page.locator("#prompt-text").input_value()
    expect(page.locator("#prompt-size")).to_contain_text("of at most 12000 characters")
    page.fill("#result-text", json.dumps({
        "kind": "kansho.profile_analysis_result", "format_version": 1, "mode": "review",
        "summary": "Mehr Rhythmus.", "evidence_basis": ["external_chat_history"], "changes": [
            {"action": "add", "key": "rhythm", "value": "kurze Sätze"},
            {"action": "update", "key": "humor", "value": "albern"},
            {"action": "remove", "key": "ghost"}]}))
    page.get_by_role("button", name="Import as proposal").click()
    expect(page.locator("#profile-status")).to_have_text("Imported: 2 change(s) wait for you.")
    proposal = page.locator(".proposal")
    expect(proposal).to_contain_text("Unknown references (left out): trait:ghost")
    expect(proposal).to_contain_text("external chat history")
    expect(proposal.locator(".change")).to_have_count(2)
    expect(proposal.locator(".change").nth(1)).to_contain_text("Now: selbstironisch")

    proposal.locator(".change").nth(0).get_by_role("button", name="Accept").click()
    expect(page.locator("#traits tr[data-trait=rhythm]")).to_contain_text("accepted")
    expect(page.locator("#versions li")).to_have_count(4)
    page.locator(".proposal .change").nth(1).get_by_role("button", name="Reject").click()
    expect(page.locator("#proposals")).to_have_text("No suggestions waiting.")
    expect(page.locator("#versions li")).to_have_count(4)  # a rejection is no version
    expect(page.locator("#traits tr[data-trait=humor]")).to_contain_text("selbstironisch")

    # A broken paste is refused with the reason, in the page's language; nothing changes.
    page.fill("#result-text", "{not json")
    page.get_by_role("button", name="Import as proposal").click()
    expect(page.locator("#profile-status")).to_have_text("Not saved: the text is not valid JSON")
    expect(page.locator("#versions li")).to_have_count(4)

    # The offline model answers the AI review plainly: no change.
    page.get_by_role("button", name="Ask the model").click()
    expect(page.locator("#profile-status")).to_contain_text("No change proposed")

    # The interaction profile: a product default replaced by the user's own wording.
    pref = page.locator("#interaction li[data-pref=answer_length]")
    expect(pref).to_contain_text("(product default)")
    pref.get_by_role("textbox").fill("Gern ausführlich.")
    pref.get_by_role("button", name="Save").click()
    expect(page.locator("#interaction li[data-pref=answer_length]")).to_contain_text(
        "Gern ausführlich. (your preference)")
    screenshot(page, "profile-light")


def test_the_profile_page_speaks_german_and_follows_dark_mode(start_nova, open_profile):
    nova = start_nova(offline=True)
    page = open_profile(nova, locale="de-DE", color_scheme="dark")
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.locator("h1")).to_have_text("Schreibprofil")
    expect(page.locator("#profile-lifecycle")).to_have_text("Noch nicht eingerichtet")
    expect(page.get_by_role("button", name="Prompt zum Kopieren erzeugen")).to_be_visible()
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    card = page.evaluate("getComputedStyle(document.querySelector('.card')).backgroundColor")
    assert background == "rgb(21, 23, 27)" and card == "rgb(31, 34, 40)"  # app.css dark
    page.fill("#core-value", "   ")
    page.get_by_role("button", name="Speichern").first.click()
    expect(page.locator("#profile-status")).to_contain_text("Nicht gespeichert")
    # An initial build from a pasted answer is adopted as a whole, as the new baseline.
    page.select_option("#review-mode", "initial_build")
    page.fill("#result-text", json.dumps({
        "kind": "kansho.profile_analysis_result", "format_version": 1,
        "mode": "initial_build", "core": {"summary": "Schreibt knapp."},
        "traits": [{"key": "humor", "value": "trocken"}]}))
    page.get_by_role("button", name="Als Vorschlag übernehmen").click()
    expect(page.locator("#profile-lifecycle")).to_have_text("Erster Aufbau wartet auf dich")
    page.get_by_role("button", name="Als neue Profil-Baseline übernehmen").click()
    expect(page.locator("#profile-lifecycle")).to_have_text("Bestätigt")
    expect(page.locator("#traits tr[data-trait=humor]")).to_contain_text("angenommen")
    page.locator("#traits-title").scroll_into_view_if_needed()
    screenshot(page, "profile-dark-de-traits")
    expect(page.locator("#versions li")).to_have_count(1)
    screenshot(page, "profile-dark-de")
