"""What the UI says, in a real browser: an API error — an error answer, or a server that is
gone — reads as its `reason.<code>` text in the user's language on every page, through the
one fetch (web/js/api.js) and the one error text (web/js/i18n.js `errorText`); and the
character is called what its definition calls it, never a name or gender the UI assumed."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import PHONE, character_bubbles, screenshot, send, user_bubbles
from tests.fakemodel import Reply

pytestmark = pytest.mark.browser

DATE = "2026-03-01"
LINES = [{"role": "user", "text": "Heute war ich im Wald."},
         {"role": "assistant", "text": "Schön! Wie war es?"}]


def test_an_error_answer_reads_in_german_in_the_journal_the_login_and_the_profile(
        start_nova, open_chat, new_context):
    nova = start_nova(offline=True, users={"anna": "anna-passwort-1"})
    assert nova.api("POST", "/api/journal/import", {"date": DATE, "messages": LINES})[0] == 201

    # The journal: an empty entry is refused (400 empty_text); the page says why in German.
    status, body = nova.api("POST", "/api/journal/entries", {"date": DATE, "text": " "})
    assert (status, body["error"]["code"]) == (400, "empty_text")
    page = open_chat(nova, locale="de-DE")
    page.locator("#view-journal").click()
    expect(page.locator(".journal-line")).to_have_count(2)
    page.locator("#journal-entry-save").click()
    expect(page.locator("#journal-entry-status")).to_have_text("Tagebuch: der Text ist leer")

    # The login page: a name that must wait (429 login_backoff), even with the right password.
    nova.block_login("anna")
    login = new_context(locale="de-DE").new_page()
    login.goto(nova.url + "/login")
    login.get_by_label("Benutzername").fill("anna")
    login.get_by_label("Passwort").fill("anna-passwort-1")
    login.get_by_role("button", name="Anmelden").click()
    expect(login.get_by_role("alert")).to_have_text(
        "Anmeldung fehlgeschlagen: zu viele fehlgeschlagene Anmeldungen; warte einen Moment")
    expect(login).to_have_url(nova.url + "/login")

    # The profile page: a paste that is not JSON (400 invalid_json), its raw text sent as is.
    profile = page.context.new_page()
    profile.goto(nova.url + "/profile")
    expect(profile.locator("body")).to_have_attribute("data-ready", "true")
    profile.fill("#result-text", "{kaputt")
    profile.get_by_role("button", name="Als Vorschlag übernehmen").click()
    expect(profile.locator("#profile-status")).to_have_text(
        "Nicht gespeichert: der Text ist kein gültiges JSON")


def test_a_server_that_is_gone_reads_as_unreachable_in_every_panel(nova, open_chat):
    page = open_chat(nova, locale="de-DE")
    expect(page.locator("#reminders")).to_have_text("Keine Erinnerungen.")
    nova.stop()
    expect(page.locator("#connection")).not_to_have_attribute("data-state", "online")

    # The reminders panel (its own error line) …
    page.get_by_label("Erinnerung", exact=True).fill("Blumen gießen")
    page.get_by_label("Wann").fill("2030-01-01T10:00:00")
    page.get_by_role("button", name="Erinnerung anlegen").click()
    expect(page.locator("#reminder-status")).to_have_text(
        "Etwas ist schiefgegangen: der Server ist nicht erreichbar")
    # … and the message box (its "not sent" line, with a retry) say the same thing.
    send(page, "Hallo?")
    expect(user_bubbles(page)).to_have_attribute("data-status", "unsent")
    expect(user_bubbles(page).locator(".status")).to_have_text(
        "nicht gesendet: der Server ist nicht erreichbar")
    expect(user_bubbles(page).get_by_role("button", name="Erneut senden")).to_be_visible()


def test_the_character_is_called_what_its_definition_calls_it(nova, fake, open_chat,
                                                               open_profile):
    # `<data dir>/characters/nova.toml` replaces the built-in definition (read again live).
    built_in = resources.files("app.characters").joinpath("nova.toml").read_text(encoding="utf-8")
    renamed = re.sub(r'(?m)^name = "Nova"$', 'name = "Mika"', built_in)
    assert renamed != built_in
    (nova.data_dir / "characters").mkdir(exist_ok=True)
    (nova.data_dir / "characters" / "nova.toml").write_text(renamed, encoding="utf-8")
    assert nova.api("GET", "/api/characters")[1][0]["name"] == "Mika"
    fake.always("responder", Reply("Hallo, schön dich zu sehen."))

    page = open_chat(nova)
    expect(page).to_have_title("Mika · Novaberg")
    expect(page.locator("#character-name")).to_have_text("Mika")
    expect(page.locator("#state-title")).to_have_text("How Mika feels")
    expect(page.locator("#memories-title")).to_have_text("What Mika remembers")
    expect(page.locator("#composer-input")).to_have_attribute("placeholder", re.compile(r"^Write to Mika…"))
    send(page, "Hallo!")
    expect(character_bubbles(page).locator(".who")).to_have_text("Mika")
    screenshot(page, "texts-mika-desktop")
    phone = open_chat(nova, viewport=PHONE)
    expect(character_bubbles(phone).locator(".who")).to_have_text("Mika")
    screenshot(phone, "texts-mika-phone")

    # The journal names a day's chat by the character's name, not its id.
    page.locator("#view-journal").click()
    conversation = page.locator(".journal-conversation").first
    expect(conversation.locator("h4")).to_have_text("Chat with Mika")
    expect(conversation.locator(".journal-line.assistant .journal-line-who")).to_contain_text("Mika")

    # The profile page's interaction profile, in German.
    profile = open_profile(nova, locale="de-DE")
    expect(profile.locator("#interaction-title")).to_have_text("Wie Mika dir antwortet")

    for shown in (page, profile):
        assert not re.search(r"\bNova\b", shown.locator("body").inner_text())
