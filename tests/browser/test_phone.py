"""Every page and dialog at a phone's width, in a real browser: at 390×844 (and 320×640, the
narrowest phones) nothing scrolls sideways (`scrollWidth ≤ innerWidth`), the top bar and the
send button stay inside the window; the offline banner can be hidden for the session; the
settings' tabs work with the keyboard."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.helpers import (
    PHONE,
    character_bubbles,
    screenshot,
    send,
    signed_in_page,
    wait_connected,
    wait_model_status,
)

pytestmark = pytest.mark.browser

SMALL_PHONE = {"width": 320, "height": 640}

# The page's width against the window's, and (to say what is wrong when it fails) the
# outermost visible elements that reach past the window's right edge.
MEASURE = """() => {
  const limit = innerWidth + 0.5;
  const visible = (el) => { const s = getComputedStyle(el); return s.visibility !== 'hidden' && s.display !== 'none'; };
  const wide = [...document.querySelectorAll('body *')].filter((el) => {
    const r = el.getBoundingClientRect();
    if (!r.width || r.right <= limit || !visible(el)) return false;
    const parent = el.parentElement.getBoundingClientRect();
    return parent.right <= limit;
  }).map((el) => `${el.tagName.toLowerCase()}#${el.id}.${el.className} → ${Math.round(el.getBoundingClientRect().right)}`);
  return { scrollWidth: document.documentElement.scrollWidth, innerWidth, wide };
}"""

WORDS = {
    "de-DE": {"settings": "Einstellungen", "tabs": ["Modell", "Privatsphäre", "Sicherung & Export"],
              "hide": "Ausblenden", "panels": "Seitenleiste", "menu": "Menü", "reset": "Gespräch zurücksetzen…",
              "forget": "Alles vergessen…", "cancel": "Abbrechen", "journal": "Tagebuch", "close": "Schließen",
              "banner": "Offline-Modus"},
    "en-US": {"settings": "Settings", "tabs": ["Model", "Privacy", "Backup & export"],
              "hide": "Hide", "panels": "Panels", "menu": "Menu", "reset": "Reset conversation…",
              "forget": "Forget everything…", "cancel": "Cancel", "journal": "Journal", "close": "Close",
              "banner": "Offline mode"},
}


def assert_fits(page: Page, what: str) -> None:
    measured = page.evaluate(MEASURE)
    assert measured["scrollWidth"] <= measured["innerWidth"], f"{what} scrolls sideways: {measured}"


def assert_inside(page: Page, locator: Locator, what: str) -> None:
    box = locator.bounding_box()
    view: Any = page.viewport_size
    assert box is not None, f"{what} is not shown"
    assert box["x"] >= -0.5 and box["y"] >= -0.5, f"{what} starts outside the window: {box}"
    assert box["x"] + box["width"] <= view["width"] + 0.5, f"{what} ends right of the window: {box}"
    assert box["y"] + box["height"] <= view["height"] + 0.5, f"{what} ends below the window: {box}"


def assert_keyboard_shrinks_the_page(page: Page, what: str) -> None:
    """A phone's on-screen keyboard makes the page smaller (`interactive-widget`), so the top
    bar and the message box stay in view above it instead of being panned away — headless
    chromium has no such keyboard, so the page's own request is what is held here."""
    content = page.locator('meta[name="viewport"]').get_attribute("content") or ""
    assert "interactive-widget=resizes-content" in content.replace(" ", ""), f"{what}: {content}"


def assert_drawn_as_a_button(link: Locator, what: str) -> None:
    """A link that does a button's job (a download, another page) is drawn like the buttons
    beside it: not underlined, in the text's colour, not the link blue."""
    drawn = link.evaluate("""(el) => { const s = getComputedStyle(el);
      return { line: s.textDecorationLine, color: s.color, text: getComputedStyle(document.body).color }; }""")
    assert drawn["line"] == "none" and drawn["color"] == drawn["text"], f"{what} is drawn as a link: {drawn}"


def assert_across(page: Page, locator: Locator, what: str) -> None:
    """Inside the window from left to right (it may be scrolled to vertically)."""
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    view: Any = page.viewport_size
    assert box is not None and box["x"] >= -0.5 and box["x"] + box["width"] <= view["width"] + 0.5, \
        f"{what} reaches past the window's sides: {box}"


@pytest.mark.parametrize(("locale", "viewport"), [
    ("de-DE", PHONE), ("en-US", PHONE), ("de-DE", SMALL_PHONE),
], ids=["de-390", "en-390", "de-320"])
def test_every_page_and_dialog_fits_a_phone(start_nova, open_chat, new_context, locale, viewport):
    words = WORDS[locale]
    nova = start_nova(offline=True)
    page = open_chat(nova, locale=locale, viewport=viewport)
    page.emulate_media(reduced_motion="reduce")  # the drawer is where it ends, not sliding
    tag = f"phone-{locale}-{viewport['width']}"
    header, send_button = page.locator("header.topbar"), page.locator("#send")
    banner = page.locator("#offline-banner")
    expect(banner).to_contain_text(words["banner"])
    for what, node in (("the top bar", header), ("the send button", send_button),
                       ("the offline banner", banner), ("the message box", page.locator("#composer-input"))):
        assert_inside(page, node, what)
    assert_fits(page, "the chat")
    assert_keyboard_shrinks_the_page(page, "the chat")
    screenshot(page, f"{tag}-chat")

    # A long line and its answer wrap inside the window.
    send(page, "Ein ziemlich langer Satz ohne Pause: Donaudampfschifffahrtsgesellschaftskapitänsmütze "
               "und https://example.org/ein/sehr/langer/pfad/der/nicht/umbrechen/will?und=noch&mehr=dazu")
    expect(character_bubbles(page)).to_have_count(1)
    assert_fits(page, "the chat with a long message")
    assert_inside(page, send_button, "the send button after sending")

    # The top bar's menu: the actions that do not fit the bar.
    page.get_by_role("button", name=words["menu"], exact=True).click()
    menu = page.locator("#topbar-actions")
    expect(menu).to_be_visible()
    assert_inside(page, menu, "the menu")
    assert_fits(page, "the open menu")
    assert_drawn_as_a_button(menu.locator("#profile-open"), "the menu's profile link")
    screenshot(page, f"{tag}-menu")

    # The settings, every tab.
    menu.get_by_role("button", name=words["settings"], exact=True).click()
    dialog = page.get_by_role("dialog", name=words["settings"])
    expect(dialog).to_be_visible()
    for tab in words["tabs"]:
        dialog.get_by_role("tab", name=tab, exact=True).click()
        panel = dialog.get_by_role("tabpanel", name=tab, exact=True)
        expect(panel).to_be_visible()
        assert_fits(page, f"the settings' tab {tab}")
        assert_inside(page, dialog.get_by_role("tab", name=tab, exact=True), f"the tab {tab}")
        assert_inside(page, dialog.get_by_role("button", name=words["close"], exact=True), "the close button")
        for field in panel.locator("input:visible, select:visible, textarea:visible, button:visible").all():
            assert_across(page, field, f"a control of the tab {tab}")
        if tab == words["tabs"][1]:  # nothing previewed yet: no empty box
            expect(panel.locator("#privacy-preview-out")).to_be_hidden()
        if tab == words["tabs"][2]:
            assert_drawn_as_a_button(panel.locator("#export-download"), "the download link")
        screenshot(page, f"{tag}-settings-{words['tabs'].index(tab)}")
    dialog.get_by_role("button", name=words["close"], exact=True).click()
    expect(dialog).to_be_hidden()

    # The side panels as a drawer, the memory panel in it, and its two dialogs.
    page.get_by_role("button", name=words["panels"], exact=True).click()
    side = page.locator("#side")
    expect(side).to_be_visible()
    assert_fits(page, "the open drawer")
    assert_inside(page, side, "the drawer")
    memory = page.locator("#memories-title").locator("xpath=..")
    assert_across(page, memory, "the memory panel")
    assert_across(page, page.locator("#memory-query"), "the memory search")
    screenshot(page, f"{tag}-drawer")
    for opener, name in ((words["reset"], "reset-dialog"), (words["forget"], "forget-all-dialog")):
        side.get_by_role("button", name=opener).click()
        confirm = page.locator(f"#{name}")
        expect(confirm).to_be_visible()
        assert_inside(page, confirm, name)
        assert_fits(page, name)
        confirm.get_by_role("button", name=words["cancel"]).click()
        expect(confirm).to_be_hidden()
    page.keyboard.press("Escape")
    expect(side).to_be_hidden()

    # The journal.
    page.get_by_role("button", name=words["journal"], exact=True).click()
    expect(page.locator("#journal-view")).to_be_visible()
    assert_fits(page, "the journal")
    assert_inside(page, header, "the top bar over the journal")
    screenshot(page, f"{tag}-journal")

    # The writing profile.
    page.goto(nova.url + "/profile")
    expect(page.locator("#profile-lifecycle")).not_to_be_empty()
    assert_fits(page, "the profile page")
    assert_inside(page, page.locator("header.topbar"), "the profile's top bar")
    assert_drawn_as_a_button(page.locator("header.topbar a"), "the profile's way back")
    assert_keyboard_shrinks_the_page(page, "the profile page")
    screenshot(page, f"{tag}-profile")

    # The login page (a fresh browser, not logged in).
    login = new_context(locale=locale, viewport=viewport).new_page()
    login.goto(nova.url + "/login")
    expect(login.locator("#login-form")).to_be_visible()
    assert_fits(login, "the login page")
    assert_inside(login, login.locator(".login-card"), "the login card")
    assert_keyboard_shrinks_the_page(login, "the login page")
    screenshot(login, f"{tag}-login")


def edge(locator: Locator) -> float:
    """Where `locator` ends, from the window's top."""
    box = locator.bounding_box()
    assert box is not None
    return round(box["y"] + box["height"], 1)


def chat_top(page: Page) -> float:
    box = page.locator("#chat-layout").bounding_box()
    assert box is not None
    return round(box["y"], 1)


def test_the_offline_banner_can_be_hidden_for_the_session(start_nova, open_chat):
    nova = start_nova(offline=True)
    page = open_chat(nova, locale="de-DE", viewport=PHONE)
    banner = page.locator("#offline-banner")
    expect(banner).to_be_visible()
    assert chat_top(page) == edge(banner)  # the banner takes its row...
    banner.get_by_role("button", name="Ausblenden").click()
    expect(banner).to_be_hidden()
    expect(page.locator("#composer-input")).to_be_focused()
    # ...and gives it to the chat. Measured against the top bar, not as a height taken
    # before: the chat's other rows (a notice, the stage line) may come and go meanwhile.
    assert chat_top(page) == edge(page.locator(".topbar"))
    page.reload()
    wait_connected(page)
    wait_model_status(page)
    expect(banner).to_be_hidden()  # the same tab: still hidden
    # A new tab is a new session: the notice is there again.
    other = page.context.new_page()
    other.goto(nova.url)
    wait_connected(other)
    expect(other.locator("#offline-banner")).to_be_visible()


def test_the_offline_banner_comes_when_the_first_model_status_ask_fails(start_nova, new_context):
    """The page asks `GET /api/llm` at the start; when that ask gets no answer (the server
    not up yet, a dropped connection) it is asked again, and the banner still comes."""
    nova = start_nova(offline=True)
    context = new_context(locale="de-DE", viewport=PHONE)
    asks: list[str] = []

    def first_fails(route: Any) -> None:
        asks.append(route.request.method)
        if len(asks) == 1:
            route.abort("connectionreset")
        else:
            route.continue_()

    context.route("**/api/llm", first_fails)
    page = signed_in_page(context, nova)
    wait_connected(page)
    expect(page.locator("#offline-banner")).to_be_visible()
    assert len(asks) >= 2


def test_the_offline_banner_follows_the_model_after_a_reconnect(start_nova, open_chat):
    """The model changed while the page was away (another tab's settings, a restart with
    another config): the page asks again once its WebSocket is back."""
    nova = start_nova()  # the fake model: no banner
    page = open_chat(nova, locale="de-DE", viewport=PHONE)
    wait_model_status(page)
    banner = page.locator("#offline-banner")
    expect(banner).to_be_hidden()
    status, _ = nova.api("PUT", "/api/llm", {"provider": "offline"})
    assert status == 200
    page.evaluate("window.novaberg.socket.drop()")
    wait_connected(page)
    expect(banner).to_be_visible()


def test_the_settings_tabs_work_with_the_keyboard(start_nova, open_chat):
    nova = start_nova(offline=True)
    page = open_chat(nova)
    page.get_by_role("button", name="Settings", exact=True).click()
    dialog = page.get_by_role("dialog", name="Settings")
    model, privacy, backup = (dialog.get_by_role("tab", name=n, exact=True)
                              for n in ("Model", "Privacy", "Backup & export"))
    expect(model).to_be_focused()
    expect(model).to_have_attribute("aria-selected", "true")

    def shows(tab: Locator, name: str) -> None:
        expect(tab).to_be_focused()
        expect(tab).to_have_attribute("aria-selected", "true")
        expect(dialog.get_by_role("tabpanel", name=name, exact=True)).to_be_visible()
        expect(dialog.get_by_role("tabpanel")).to_have_count(1)  # the others are hidden

    page.keyboard.press("ArrowRight")
    shows(privacy, "Privacy")
    expect(model).to_have_attribute("tabindex", "-1")  # one tab stop: the selected tab
    page.keyboard.press("End")
    shows(backup, "Backup & export")
    page.keyboard.press("ArrowRight")
    shows(model, "Model")
    page.keyboard.press("ArrowLeft")
    shows(backup, "Backup & export")
    page.keyboard.press("Home")
    shows(model, "Model")
    # Tab leaves the tabs for the panel's first control.
    page.keyboard.press("Tab")
    expect(dialog.get_by_label("Provider", exact=True)).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    # The offline banner's button opens the model's tab, whichever was shown last.
    page.get_by_role("button", name="Settings", exact=True).click()
    backup.click()
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Open settings").click()
    expect(model).to_have_attribute("aria-selected", "true")


def test_the_top_bars_menu_opens_and_closes_as_a_person_expects(start_nova, open_chat):
    nova = start_nova(offline=True)
    page = open_chat(nova, locale="de-DE", viewport=PHONE)
    toggle = page.get_by_role("button", name="Menü", exact=True)
    menu = page.locator("#topbar-actions")
    expect(menu).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(menu).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(menu.get_by_role("button", name="Einstellungen", exact=True)).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(toggle).to_be_focused()
    # A tap anywhere else closes it, and that tap still does its own job.
    toggle.click()
    expect(menu).to_be_visible()
    page.locator("#composer-input").click()
    expect(menu).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#composer-input")).to_be_focused()
    # The same button closes it again.
    toggle.click()
    toggle.click()
    expect(menu).to_be_hidden()
