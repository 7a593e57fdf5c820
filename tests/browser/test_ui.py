"""The rest of the page in a real browser: language, light and dark, phone width, panels,
session reset, the headless login page, the offline banner and the model settings."""

from __future__ import annotations

import stat

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import (
    PHONE,
    TOKEN,
    character_bubbles,
    screenshot,
    send,
    signed_in_page,
    user_bubbles,
    wait_connected,
    wait_model_status,
)
from tests.fakemodel import Reply

pytestmark = pytest.mark.browser


def luminance(page: Page, selector: str, prop: str = "backgroundColor") -> float:
    """Relative luminance (0 black … 1 white) of a computed colour."""
    return page.evaluate("""([selector, prop]) => {
        const [r, g, b] = getComputedStyle(document.querySelector(selector))[prop]
          .match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number)
          .map((c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    }""", [selector, prop])


def contrast(page: Page, selector: str) -> float:
    """WCAG contrast ratio between an element's text and the page background."""
    text, background = luminance(page, selector, "color"), luminance(page, "body")
    light, dark = max(text, background), min(text, background)
    return (light + 0.05) / (dark + 0.05)


def test_german_and_english_by_browser_language(nova, fake, open_chat):
    fake.always("responder", Reply("Hallo!"))
    german = open_chat(nova, locale="de-DE")
    expect(german.locator("html")).to_have_attribute("lang", "de")
    expect(german.get_by_role("button", name="Senden")).to_be_visible()
    expect(german.locator("#connection-text")).to_have_text("Verbunden")
    expect(german.get_by_role("textbox", name="Deine Nachricht")).to_be_visible()
    send(german, "Wie geht's?")
    expect(user_bubbles(german).locator(".who")).to_have_text("Du")
    expect(german.locator("#state-title")).to_have_text("Wie es Nova geht")
    screenshot(german, "ui-german")

    english = open_chat(nova, locale="en-GB")
    expect(english.locator("html")).to_have_attribute("lang", "en")
    expect(english.get_by_role("button", name="Send")).to_be_visible()
    expect(english.locator("#state-title")).to_have_text("How Nova feels")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_light_and_dark_follow_the_system_and_stay_readable(nova, fake, open_chat, scheme):
    fake.always("responder", Reply("Eine Antwort, gut lesbar."))
    page = open_chat(nova, color_scheme=scheme)
    send(page, "Wie sieht das aus?")
    expect(character_bubbles(page)).to_have_count(1)
    background = luminance(page, "body")
    assert (background > 0.8) if scheme == "light" else (background < 0.05)
    for selector in (".msg-user .text", ".msg-character .text", "#state-title"):
        assert contrast(page, selector) >= 4.5, selector
    screenshot(page, f"ui-{scheme}")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_phone_width_puts_the_panels_in_a_drawer(nova, fake, open_chat, scheme):
    fake.always("responder", Reply("Auch auf dem Telefon."))
    page = open_chat(nova, viewport=PHONE, color_scheme=scheme)
    side, toggle = page.locator("#side"), page.get_by_role("button", name="Panels", exact=True)
    expect(side).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")

    send(page, "Ein ziemlich langer Satz, der auf einem schmalen Bildschirm umbrechen muss, "
               "ohne dass die Seite seitlich scrollt: Donaudampfschifffahrtsgesellschaft.")
    expect(character_bubbles(page)).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, f"ui-phone-{scheme}")

    toggle.click()
    expect(side).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_role("button", name="Close panels")).to_be_focused()
    screenshot(page, f"ui-phone-panels-{scheme}")
    page.keyboard.press("Escape")
    expect(side).to_be_hidden()
    expect(toggle).to_be_focused()


def test_desktop_width_shows_the_panels_beside_the_chat(nova, open_chat):
    page = open_chat(nova)
    expect(page.locator("#side")).to_be_visible()
    expect(page.get_by_role("button", name="Panels", exact=True)).to_be_hidden()
    chat, side = page.locator("#chat").bounding_box(), page.locator("#side").bounding_box()
    assert chat and side and side["x"] >= chat["x"] + chat["width"] - 1
    # The chat takes the height that is left (the hidden banner leaves no gap).
    composer = page.locator("#composer").bounding_box()
    assert composer and composer["y"] + composer["height"] >= 800 - 1


def test_keyboard_and_screen_reader_basics(nova, open_chat):
    page = open_chat(nova)
    log = page.get_by_role("log", name="Conversation with Nova")
    expect(log).to_have_attribute("aria-live", "polite")
    expect(page.get_by_role("textbox", name="Your message")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Connected")).to_have_count(1)
    unnamed = page.evaluate("""() => [...document.querySelectorAll('button, input, select, textarea')]
        .filter((el) => !el.closest('[hidden]') && el.type !== 'hidden')
        .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                        && !el.textContent.trim())
        .map((el) => el.outerHTML)""")
    assert unnamed == []
    # The skip link is the first stop in the tab order, shows when focused and leads to the
    # message box.
    first = page.evaluate("""() => document.querySelector(
        'a[href], button:not([disabled]), input, select, textarea').className""")
    assert first == "skip-link"
    skip = page.get_by_role("link", name="Skip to the message box")
    page.get_by_role("button", name="Send").focus()
    skip.focus()
    assert skip.bounding_box()["y"] >= 0
    page.keyboard.press("Enter")
    expect(page.locator("#composer-input")).to_be_focused()


def test_session_reset_asks_first_and_then_forgets_the_session_not_the_history(nova, fake,
                                                                               open_chat):
    fake.always("responder", Reply("Ich merke mir das."))
    page = open_chat(nova)
    send(page, "Merk dir: Kaffee")
    expect(character_bubbles(page)).to_have_count(1)

    page.get_by_role("button", name="Reset conversation…").click()
    dialog = page.get_by_role("dialog", name="Reset the conversation?")
    expect(dialog).to_be_visible()
    screenshot(page, "ui-reset-dialog")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    expect(user_bubbles(page)).to_have_count(1)
    assert nova.api("GET", "/api/characters/nova/session")[1]["turns"]

    page.get_by_role("button", name="Reset conversation…").click()
    dialog.get_by_role("button", name="Reset").click()
    expect(page.locator("#notice")).to_have_text("The conversation was reset.")
    session = nova.api("GET", "/api/characters/nova/session")[1]
    assert (session["turns"], session["summary"]) == ([], None)
    # The history stays; the marker of the working memory moved below it.
    expect(user_bubbles(page)).to_have_count(1)
    expect(character_bubbles(page)).to_have_count(1)
    expect(page.locator("#message-list > li").last).to_have_class("working-memory")

    page.reload()
    wait_connected(page)
    expect(user_bubbles(page)).to_have_count(1)
    expect(character_bubbles(page)).to_have_count(1)
    expect(page.locator("#message-list > li").last).to_have_class("working-memory")
    send(page, "Neu nach dem Reset")
    expect(character_bubbles(page)).to_have_count(2)
    order = page.locator("#message-list > li").evaluate_all(
        "nodes => nodes.map(n => n.classList.contains('working-memory') ? 'marker' : n.textContent)")
    marker = order.index("marker")
    assert any("Merk dir: Kaffee" in item for item in order[:marker])
    assert any("Neu nach dem Reset" in item for item in order[marker:])


def test_a_reset_elsewhere_moves_the_marker_in_every_open_tab(nova, fake, open_chat):
    # The reset comes from another tab or device: this page learns it from `session_reset`.
    fake.always("responder", Reply("Ich merke mir das."))
    page = open_chat(nova)
    send(page, "Merk dir: Kaffee")
    expect(character_bubbles(page)).to_have_count(1)

    status, _ = nova.api("DELETE", "/api/characters/nova/session")

    assert status == 204
    expect(page.locator("#notice")).to_have_text("The conversation was reset.")
    expect(page.locator("#message-list > li").last).to_have_class("working-memory")
    expect(user_bubbles(page)).to_have_count(1)
    expect(character_bubbles(page)).to_have_count(1)


def test_headless_login_page(start_nova, new_context):
    nova = start_nova(users={"anna": "anna-passwort-1"})
    page = new_context(locale="de-DE").new_page()
    page.goto(nova.url + "/")
    expect(page).to_have_url(nova.url + "/login")
    expect(page.get_by_role("heading", name="Bei Novaberg anmelden")).to_be_visible()

    page.get_by_label("Benutzername").fill("anna")
    page.get_by_label("Passwort").fill("falsch-falsch")
    page.get_by_role("button", name="Anmelden").click()
    expect(page.get_by_role("alert")).to_have_text("Unbekannter Benutzer oder falsches Passwort.")
    screenshot(page, "ui-login-failed")

    page.get_by_label("Passwort").fill("anna-passwort-1")
    page.get_by_label("Passwort").press("Enter")
    expect(page).to_have_url(nova.url + "/")
    wait_connected(page)
    assert page.evaluate("fetch('/api/me').then(r => r.json())")["user_id"] == "anna"
    # Anna is no admin: she sees the model settings but cannot change them.
    expect(page.get_by_role("button", name="Abmelden")).to_be_visible()
    page.get_by_role("button", name="Einstellungen").click()
    expect(page.locator("#settings-readonly")).to_be_visible()
    expect(page.locator("#settings-save")).to_be_disabled()
    page.get_by_role("button", name="Schließen").click()

    page.get_by_role("button", name="Abmelden").click()
    expect(page).to_have_url(nova.url + "/login")
    page.goto(nova.url + "/")
    expect(page).to_have_url(nova.url + "/login")


def test_offline_banner_and_switching_to_a_model_in_the_settings(start_nova, fake, open_chat):
    fake.always("responder", Reply("Jetzt mit echtem Modell."))
    nova = start_nova(offline=True)
    page = open_chat(nova)
    banner = page.locator("#offline-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Offline mode: no language model is active.")
    screenshot(page, "ui-offline-banner")

    banner.get_by_role("button", name="Open settings").click()
    dialog = page.get_by_role("dialog", name="Settings")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_label("Provider", exact=True)).to_have_value("offline")
    expect(dialog.get_by_role("button", name="Test connection")).to_be_disabled()
    dialog.get_by_label("Provider", exact=True).select_option("openai")
    dialog.get_by_label("Server URL").fill(fake.url)
    dialog.get_by_role("button", name="Test connection").click()
    expect(page.locator("#settings-status")).to_have_text(
        f"The connection to {fake.url} works (fake, context window 32,768 tokens).")
    expect(dialog.get_by_role("combobox", name="Model", exact=True)).to_have_value("fake")
    screenshot(page, "ui-settings-tested")
    dialog.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-status")).to_have_text("Saved.")
    expect(page.locator("#settings-current")).to_have_text("Active now: openai · fake")
    dialog.get_by_role("button", name="Close").click()
    expect(banner).to_be_hidden()

    send(page, "Bist du jetzt ein echtes Modell?")
    expect(character_bubbles(page).locator(".text")).to_have_text("Jetzt mit echtem Modell.")
    assert fake.chats("responder")
    config = (nova.data_dir / "config.toml").read_text()
    assert 'llm_provider = "openai"' in config and f'llm_url = "{fake.url}"' in config

    page.reload()
    wait_connected(page)
    expect(banner).to_be_hidden()


@pytest.mark.parametrize(("locale", "settings", "active", "builtin"), [
    ("en-US", "Settings", "Active now: the built-in offline model (no language model).",
     "built-in offline model"),
    ("de-DE", "Einstellungen", "Aktiv: das eingebaute Offline-Modell (kein Sprachmodell).",
     "eingebautes Offline-Modell"),
])
def test_the_model_settings_say_the_offline_model_is_in_use_and_what_is_configured(
        start_nova, open_chat, locale, settings, active, builtin):
    # No provider chosen and no model server found: the offline model runs. The settings say
    # so, and show the model the configuration names (auto-detection would take it).
    nobody = "http://127.0.0.1:9"
    nova = start_nova(config={"llm_model": "llama3.2", "llm_probe_openai_url": nobody,
                              "llm_probe_ollama_url": nobody})
    page = open_chat(nova, locale=locale)
    wait_model_status(page)
    expect(page.locator("#offline-banner")).to_be_visible()
    page.get_by_role("button", name=settings, exact=True).click()
    expect(page.locator("#settings-current")).to_have_text(active)
    expect(page.locator("#settings-provider")).to_have_value("offline")
    expect(page.locator("#settings-model")).to_have_value("llama3.2")
    expect(page.locator("#settings-model")).to_be_disabled()
    # Chosen offline explicitly: nothing configured, the empty field names the offline model.
    page.keyboard.press("Escape")
    nova.api("PUT", "/api/llm", {"provider": "offline"})
    page.get_by_role("button", name=settings, exact=True).click()
    expect(page.locator("#settings-current")).to_have_text(active)
    expect(page.locator("#settings-model")).to_have_value("")
    expect(page.locator("#settings-model")).to_have_attribute("placeholder", builtin)
    page.locator("#settings-provider").select_option("ollama")
    expect(page.locator("#settings-model")).to_have_attribute("placeholder", "")


def test_an_api_key_is_typed_in_but_never_shown_back(nova, open_chat):
    page = open_chat(nova)
    expect(page.locator("#offline-banner")).to_be_hidden()
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_role("dialog", name="Settings")
    expect(dialog.get_by_label("Provider", exact=True)).to_have_value("openai")
    expect(page.locator("#settings-api-key-state")).to_have_text("No key stored.")
    key_field = dialog.get_by_label("API key")
    expect(key_field).to_have_attribute("type", "password")
    key_field.fill("sk-geheim-0123456789")
    dialog.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-status")).to_have_text("Saved.")
    expect(key_field).to_have_value("")
    expect(page.locator("#settings-api-key-state")).to_have_text(
        "A key is stored. Type a new one to replace it.")

    secrets = nova.data_dir / "secrets.toml"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert "sk-geheim-0123456789" in secrets.read_text()
    assert "sk-geheim" not in (nova.data_dir / "config.toml").read_text()
    status, info = nova.api("GET", "/api/llm")
    assert status == 200 and info["api_key"] == "set" and "sk-geheim" not in str(info)
    page.reload()
    wait_connected(page)
    page.get_by_role("button", name="Settings").click()
    assert "sk-geheim" not in page.content()
    expect(dialog.get_by_label("API key")).to_have_value("")

    # Back to offline: the banner says so at once.
    dialog.get_by_label("Provider", exact=True).select_option("offline")
    dialog.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-status")).to_have_text("Saved.")
    dialog.get_by_role("button", name="Close").click()
    expect(page.locator("#offline-banner")).to_be_visible()
    assert TOKEN not in page.content()


def test_the_settings_offer_the_model_servers_found_on_this_machine(start_nova, fake,
                                                                    open_chat):
    # No provider configured: auto-detection asks the usual local ports, here the fake's
    # (as an OpenAI-style server) and a closed one (as Ollama).
    nova = start_nova(config={"llm_probe_openai_url": fake.url,
                              "llm_probe_ollama_url": "http://127.0.0.1:9",
                              "model_backoff_seconds": 0.01})
    page = open_chat(nova)
    expect(page.locator("#offline-banner")).to_be_hidden()  # it found the fake and uses it
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_role("dialog", name="Settings")
    found = page.locator("#settings-detected li")
    expect(found).to_have_count(1)
    expect(found).to_contain_text(f"openai — {fake.url} (fake)")

    dialog.get_by_label("Provider", exact=True).select_option("offline")
    found.get_by_role("button", name="Use").click()
    expect(dialog.get_by_label("Provider", exact=True)).to_have_value("openai")
    expect(dialog.get_by_label("Server URL")).to_have_value(fake.url)
    expect(dialog.get_by_role("combobox", name="Model", exact=True)).to_have_value("fake")
    screenshot(page, "ui-settings-detected")


@pytest.mark.parametrize(("locale", "settings", "hint", "works"), [
    ("en-US", "Settings", "Leave empty for {url}", "The connection to {url} works"),
    ("de-DE", "Einstellungen", "Leer lassen für {url}", "Die Verbindung zu {url} funktioniert"),
])
def test_an_empty_server_url_tests_and_saves_the_default_the_field_shows(start_nova, fake, open_chat,
                                                                         locale, settings, hint, works):
    # The default comes from the server's settings (here pointed at the fake), not from the page.
    nova = start_nova(offline=True, config={"llm_provider": "offline", "llm_probe_openai_url": fake.url,
                                            "llm_probe_ollama_url": "http://127.0.0.1:9"})
    page = open_chat(nova, locale=locale)
    page.get_by_role("button", name=settings, exact=True).click()
    url = page.locator("#settings-url")
    page.locator("#settings-provider").select_option("openai")
    expect(url).to_have_value("")
    expect(url).to_have_attribute("placeholder", fake.url)
    expect(page.locator("#settings-url-hint")).to_have_text(hint.format(url=fake.url))
    page.locator("#settings-test").click()
    expect(page.locator("#settings-status")).to_contain_text(works.format(url=fake.url))
    page.locator("#settings-provider").select_option("ollama")
    expect(url).to_have_attribute("placeholder", "http://127.0.0.1:9")
    page.locator("#settings-test").click()
    expect(page.locator("#settings-status")).to_contain_text("http://127.0.0.1:9")
    expect(page.locator("#settings-status")).to_have_class("form-status error")
    page.locator("#settings-provider").select_option("openai")
    page.locator("#settings-save").click()
    expect(page.locator("#settings-current")).to_contain_text("openai · fake")
    assert nova.api("GET", "/api/llm")[1]["url"] == fake.url


def test_a_normal_page_exposes_no_live_objects(nova, browser):
    context = browser.new_context()  # without the tests' flag
    try:
        page = signed_in_page(context, nova)
        wait_connected(page)
        assert page.evaluate("typeof window.novaberg") == "undefined"
    finally:
        context.close()
