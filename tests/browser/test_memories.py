"""The panel "Was Nova sich merkt" in a real browser (design §3a): a fact told in the chat
appears there (offline model, real Pixie worker), search finds it across inflection, edit
and forget work and reach the server, a session reset leaves it alone, and "Alles
vergessen" asks first and then forgets everything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import character_bubbles, screenshot, send

pytestmark = pytest.mark.browser

FACT = "Meine Schwester heißt Jana und wohnt in Leipzig."


def assert_no_reminder_word(panel) -> None:
    """In German the panel is the character's "Gedächtnis": "Erinnerung" names only the
    reminders, in its text and in what a screen reader reads out."""
    said = panel.evaluate("""(el) => [el.innerText, ...[...el.querySelectorAll('[aria-label], [placeholder]')]
      .flatMap((n) => [n.getAttribute('aria-label'), n.getAttribute('placeholder')])].join(' ')""")
    assert "Erinnerung" not in said, said


def test_the_memory_panel_shows_searches_edits_and_forgets(start_nova, open_chat):
    nova = start_nova(offline=True, NOVABERG_PIXIE_POLL_SECONDS="0.05")
    page = open_chat(nova, locale="de-DE")
    panel = page.get_by_role("region", name="Was Nova sich merkt")
    expect(panel).to_contain_text("Nova hat sich noch nichts über dich gemerkt.")

    send(page, FACT)
    expect(character_bubbles(page)).to_have_count(1)
    memory = panel.locator("li.memory")
    expect(memory).to_have_count(1)
    expect(memory).to_contain_text(FACT)
    expect(memory).to_contain_text("Person")
    screenshot(page, "memories-panel")

    search = panel.get_by_role("searchbox", name="Gedächtnis durchsuchen")
    search.fill("Leipziger")
    expect(memory).to_have_count(1)
    search.fill("Hamburg")
    expect(panel).to_contain_text("Nichts im Gedächtnis passt dazu.")
    assert_no_reminder_word(panel)
    search.fill("")
    expect(memory).to_have_count(1)

    # Download what Nova remembers (the memory export, design §3a / issue 14 item 7).
    with page.expect_download() as info:
        panel.get_by_role("link", name="JSON").click()
    exported = json.loads(Path(info.value.path()).read_text())
    assert exported["kind"] == "novaberg.memories" and exported["character_id"] == "nova"
    assert [m["text"] for m in exported["memories"]] == [FACT]

    # A session reset leaves long-term memory alone.
    page.get_by_role("button", name="Gespräch zurücksetzen…").click()
    page.get_by_role("dialog").get_by_role("button", name="Zurücksetzen").click()
    # The session ends (its marker moves below the history, which stays).
    expect(page.locator("#message-list > li").last).to_have_class("working-memory")
    page.reload()
    expect(panel.locator("li.memory")).to_have_count(1)

    panel.get_by_role("button", name=f"Bearbeiten: {FACT}").click()
    field = panel.get_by_role("textbox", name="Text im Gedächtnis")
    expect(field).to_be_focused()
    field.fill("Meine Schwester heißt Jana und wohnt in Dresden.")
    panel.get_by_role("button", name="Speichern").click()
    expect(panel).to_contain_text("Geändert.")
    assert_no_reminder_word(panel)
    expect(memory).to_contain_text("wohnt in Dresden")
    status, stored = nova.api("GET", "/api/characters/nova/memories")
    assert status == 200 and [m["text"] for m in stored] == [
        "Meine Schwester heißt Jana und wohnt in Dresden."]

    panel.get_by_role("button", name="Vergessen: Meine Schwester heißt Jana und wohnt in Dresden.").click()
    expect(memory).to_have_count(0)
    expect(panel).to_contain_text("Vergessen.")
    assert nova.api("GET", "/api/characters/nova/memories") == (200, [])


def test_forget_everything_asks_first(start_nova, open_chat):
    nova = start_nova(offline=True, NOVABERG_PIXIE_POLL_SECONDS="0.05")
    page = open_chat(nova)
    send(page, "I work at the bakery.")
    expect(character_bubbles(page)).to_have_count(1)
    send(page, "My brother is called Tom.")
    expect(character_bubbles(page)).to_have_count(2)
    panel = page.get_by_role("region", name="What Nova remembers")
    expect(panel.locator("li.memory")).to_have_count(2)

    panel.get_by_role("button", name="Forget everything…").click()
    dialog = page.get_by_role("dialog", name="Forget everything?")
    expect(dialog).to_contain_text("Nova forgets every memory of you, for good.")
    dialog.get_by_role("button", name="Cancel").click()
    expect(panel.locator("li.memory")).to_have_count(2)

    panel.get_by_role("button", name="Forget everything…").click()
    dialog.get_by_role("button", name="Forget everything").click()
    expect(panel).to_contain_text("Forgotten: 2 memories of you.")
    expect(panel.locator("li.memory")).to_have_count(0)
    assert nova.api("GET", "/api/characters/nova/memories") == (200, [])
