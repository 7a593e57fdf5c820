"""The chat page's durable history in a real browser (design §5 "The chat page"): older pages on
scroll with the reader's place kept, day dividers in the user's own date format, the marker
of the character's working memory, imported conversations with their source, the search box
that opens a hit's day, the first screen, and the tab in the background that counts and
notifies."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import (
    PHONE,
    character_bubbles,
    screenshot,
    send,
    user_bubbles,
    wait_connected,
)
from tests.fakemodel import Reply
from tests.procs import wait_for

pytestmark = pytest.mark.browser

DAY = 86400.0


def seed_log(nova, count: int, *, days: int = 5, special: dict[int, str] | None = None) -> list[str]:
    """`count` lines of the message log (user and answer alternating) over the last `days`
    days, written into the running app's database as the dispatcher writes them; returns the
    texts, oldest first. `special` replaces the text of some lines."""
    now = time.time()
    start = now - days * DAY
    step = (days * DAY - 3600) / count
    texts, rows = [], []
    for index in range(count):
        at = start + index * step
        role = "user" if index % 2 == 0 else "assistant"
        text = (special or {}).get(index, f"Zeile {index} von {'dir' if role == 'user' else 'Nova'}")
        day = dt.datetime.fromtimestamp(at).date().isoformat()  # the app's zone is the machine's
        rows.append((f"seed:{index}", "local", "nova", f"seed-t{index // 2}",
                     json.dumps([f"seed-m{index // 2}"]), role, "" if role == "user" else "antwort",
                     text, at, day))
        texts.append(text)
    conn = sqlite3.connect(nova.data_dir / "novaberg.sqlite3")
    try:
        with conn:
            conn.executemany("INSERT INTO messages (entry_key, user_id, character_id, turn_id, "
                             "message_ids, role, origin, text, created, calendar_date) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    finally:
        conn.close()
    return texts


AT_BOTTOM = """() => { const n = document.querySelector('#messages');
                return n.scrollHeight - n.scrollTop - n.clientHeight < 5; }"""


def shown_texts(page: Page) -> list[str]:
    return page.locator("#message-list .msg .text").evaluate_all("ns => ns.map(n => n.textContent)")


def scroll_to_top_until_the_beginning(page: Page, pages: int) -> None:
    for _ in range(pages):
        if page.locator(".history-head.start").count():
            return
        page.locator("#messages").evaluate("node => node.scrollTo({top: 0, behavior: 'instant'})")
        page.wait_for_timeout(150)
    expect(page.locator(".history-head.start")).to_be_visible()


def test_older_history_loads_on_scroll_in_pages_with_the_place_kept(start_nova, open_chat):
    nova = start_nova(offline=True)
    texts = seed_log(nova, 300)
    sizes: list[int] = []
    page = open_chat(nova, locale="de-DE")
    page.on("response", lambda r: sizes.append(len(r.json()["messages"]))
            if "/history?" in r.url or r.url.endswith("/history") else None)
    expect(page.locator("#message-list .msg")).to_have_count(50)
    assert shown_texts(page) == texts[-50:]
    # Newest at the bottom, the reader there (and kept there while the lines settle).
    page.wait_for_function(AT_BOTTOM, timeout=5000)

    # From the bottom straight to the top: one older page comes in (scrolling the first line
    # into view first would already reach the top's load zone and fetch a page of its own).
    first = page.locator("#message-list .msg").first
    anchor = page.locator(f"[data-key='{first.get_attribute('data-key')}']")
    page.locator("#messages").evaluate("node => node.scrollTo({top: 0, behavior: 'instant'})")
    expect(page.locator("#message-list .msg")).to_have_count(100)
    # The line that was at the top is still in view: the older page came in above it.
    box, view = anchor.bounding_box(), page.locator("#messages").bounding_box()
    assert box is not None and view is not None
    assert view["y"] <= box["y"] <= view["y"] + view["height"]

    scroll_to_top_until_the_beginning(page, 10)
    assert shown_texts(page) == texts  # every line once, in order
    keys = page.locator("#message-list .msg").evaluate_all("ns => ns.map(n => n.dataset.key)")
    assert len(keys) == len(set(keys))
    assert sizes == [50] * 5  # the 250 older lines: five pages of 50, none bigger
    # One divider per day, in the user's own format.
    days = page.locator(".day-divider time").evaluate_all("ns => ns.map(n => [n.dateTime, n.textContent])")
    assert len(days) == len({d for d, _ in days}) >= 5
    iso, label = days[-1]
    expected = dt.date.fromisoformat(iso)
    weekday = ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"][expected.weekday()]
    assert label.startswith(f"{weekday}, {expected.day}. ")
    screenshot(page, "history-beginning")


def test_the_marker_shows_where_the_working_memory_begins(start_nova, open_chat):
    nova = start_nova(offline=True)
    seed_log(nova, 20)
    page = open_chat(nova, locale="de-DE")
    marker = page.locator("#message-list .working-memory")
    # The session is empty: all of the log is archive, the marker below it.
    expect(marker).to_have_text("Ab hier hat Nova das Gespräch im Kopf")
    expect(page.locator("#message-list > li").last).to_have_class("working-memory")
    send(page, "Setz Milch auf die Einkaufsliste")
    expect(character_bubbles(page).filter(has_text="Milch")).to_have_count(1)
    order = page.locator("#message-list > li").evaluate_all(
        "ns => ns.map(n => n.classList.contains('working-memory') ? 'marker' : n.textContent)")
    assert order[-3] == "marker" and "Setz Milch" in order[-2]
    page.reload()
    wait_connected(page)
    # Now the session holds the new exchange: the marker stands right above it.
    expect(marker).to_have_count(1)
    order = page.locator("#message-list > li").evaluate_all(
        "ns => ns.map(n => n.classList.contains('working-memory') ? 'marker' : n.textContent)")
    assert order[-3] == "marker" and "Setz Milch" in order[-2]
    screenshot(page, "history-marker")


def test_history_and_live_lines_meet_without_doubles(nova, fake, open_chat, new_context):
    fake.always("responder", Reply("Gern geschehen."))
    context = new_context()
    page = open_chat(nova, context)
    second = open_chat(nova, context)
    for text in ("Erste Frage", "Zweite Frage"):
        send(page, text)
        expect(character_bubbles(page).filter(has_text="Gern geschehen.")).to_have_count(
            1 if text == "Erste Frage" else 2)
    for tab in (page, second):
        # Loading the log again over what the tab shows live changes nothing.
        tab.evaluate("window.novaberg.app.history.loadLatest()")
        tab.evaluate("window.novaberg.app.resync()")
        tab.wait_for_timeout(300)
        expect(user_bubbles(tab)).to_have_count(2)
        expect(character_bubbles(tab)).to_have_count(2)
        expect(tab.locator(".msg-user.other")).to_have_count(0)
    page.reload()
    wait_connected(page)
    expect(user_bubbles(page)).to_have_count(2)
    expect(character_bubbles(page)).to_have_count(2)


def test_imported_conversations_appear_with_their_source(nova, open_chat):
    today = dt.date.today().isoformat()
    status, _ = nova.api("POST", "/api/journal/import", {"date": today, "messages": [
        {"role": "user", "text": "Aus einem anderen Chat"},
        {"role": "assistant", "text": "Die **Antwort** von dort"}]})
    assert status == 201
    at = time.time() - 3600
    status, _ = nova.api("POST", "/api/imports", {"kind": "novaberg.chat", "format_version": 1,
                                                 "messages": [{
        "entry_key": "alt:user", "turn_id": "alt", "character_id": "nova", "role": "user",
        "text": "Vom alten Rechner", "created": at, "calendar_date": today}]})
    assert status == 200
    page = open_chat(nova)
    imported = page.locator("#message-list .msg-imported")
    expect(imported).to_have_count(2)
    expect(imported.first.locator(".badge-source")).to_have_text("imported conversation")
    expect(imported.nth(1).locator(".who")).to_have_text("The other side")
    expect(imported.nth(1).locator("strong")).to_have_text("Antwort")
    exported = user_bubbles(page).filter(has_text="Vom alten Rechner")
    expect(exported.locator(".badge-source")).to_have_text("imported from an export")
    screenshot(page, "history-imported")


def test_a_search_hit_opens_its_day_and_the_way_back_to_the_present(start_nova, open_chat):
    nova = start_nova(offline=True)
    texts = seed_log(nova, 300, special={20: "Wir fahren im Frühling nach Leipzig zur Messe",
                                         250: "Leipzig war schön"})
    page = open_chat(nova, locale="de-DE")
    expect(page.locator("#message-list .msg")).to_have_count(50)
    page.locator("#history-query").fill("Leipziger")
    hits = page.locator("#search-hits .search-hit")
    expect(hits).to_have_count(2)
    expect(hits.first.locator("mark")).to_have_text("Leipzig")
    screenshot(page, "history-search")

    hits.nth(1).click()  # the older one: not loaded yet
    target = page.locator("#message-list .msg", has_text="nach Leipzig zur Messe")
    expect(target).to_have_class("msg msg-user mine hit")
    expect(target).to_be_in_viewport()
    expect(page.locator("#search-results")).to_be_hidden()
    # The day around the hit, not everything up to now; the way back is offered.
    assert len(shown_texts(page)) <= 50 and texts[-1] not in shown_texts(page)
    expect(page.locator(".history-foot")).to_be_visible()
    screenshot(page, "history-search-hit")

    page.locator(".history-foot button").click()
    expect(page.locator(".history-foot")).to_have_count(0)
    expect(page.locator("#message-list .msg").last).to_contain_text(texts[-1])
    assert texts[20] not in shown_texts(page)

    # Again, and now down to the present by scrolling: one window, every line once.
    page.locator("#history-query").fill("Frühling")
    expect(hits).to_have_count(1)
    hits.first.click()
    expect(target).to_be_in_viewport()
    for _ in range(20):
        if not page.locator(".history-foot").count():
            break
        page.locator("#messages").evaluate(
            "node => node.scrollTo({top: node.scrollHeight, behavior: 'instant'})")
        page.wait_for_timeout(150)
    expect(page.locator(".history-foot")).to_have_count(0)
    shown = shown_texts(page)
    assert shown == texts[texts.index(shown[0]):]


def test_the_first_screen_greets_and_offers_three_phrases(nova, fake, open_chat):
    page = open_chat(nova, locale="de-DE")
    welcome = page.locator("#message-list .welcome")
    expect(welcome).to_contain_text("Hallo, ich bin Nova.")
    examples = welcome.locator(".example")
    expect(examples).to_have_count(3)
    expect(examples.locator(".example-kind")).to_have_text(["Liste", "Erinnerung", "Fürs Tagebuch"])
    screenshot(page, "chat-first-screen")
    examples.nth(1).click()
    expect(page.locator("#composer-input")).to_have_value("Erinnere mich morgen um 9 Uhr an den Zahnarzt")
    expect(page.locator("#composer-input")).to_be_focused()
    page.wait_for_timeout(300)
    expect(user_bubbles(page)).to_have_count(0)  # filled in, not sent
    assert fake.chats() == []
    greeting = page.evaluate("""async () => {
        const { characterGreeting } = await import('/static/js/characters.js');
        return [characterGreeting({ id: 'kai', name: 'Kai', first_mes: 'Hi {{user}}, ich bin {{char}}.' }, 'du'),
                characterGreeting({ id: 'kai', name: 'Kai', greeting: 'Moin!' }, 'du'),
                characterGreeting({ id: 'kai', name: 'Kai' }, 'du')];
    }""")
    assert greeting == ["Hi du, ich bin Kai.", "Moin!", None]


def test_the_chat_column_fits_a_phone(nova, fake, open_chat):
    # The column's own content never scrolls sideways (the header is the phone layout's).
    fake.always("responder", Reply("- **eins** mit `code` und [Link](https://example.org/"
                                   + "sehr-lang" * 20 + ")\n- zwei"))
    page = open_chat(nova, viewport=PHONE)
    expect(page.locator(".welcome .example")).to_have_count(3)
    overflow = "n => n.scrollWidth - n.clientWidth"
    assert page.locator("#messages").evaluate(overflow) <= 0
    screenshot(page, "chat-first-screen-phone")
    send(page, "Ein Wort" + "ohneLeerzeichen" * 20)
    expect(character_bubbles(page).locator("li")).to_have_count(2)
    page.locator("#history-query").fill("Wort")
    expect(page.locator("#search-hits .search-hit")).to_have_count(1)
    assert page.locator("#messages").evaluate(overflow) <= 0
    assert page.locator("#search-results").evaluate(overflow) <= 0
    screenshot(page, "chat-search-phone")


HIDDEN = """() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    document.hasFocus = () => false;
    document.dispatchEvent(new Event('visibilitychange'));
}"""
VISIBLE = """() => {
    delete document.visibilityState;
    document.hasFocus = () => true;
    document.dispatchEvent(new Event('visibilitychange'));
}"""
# The real Notification, each one also written down for the test to read.
RECORD_NOTIFICATIONS = """
window.__notes = [];
const Real = window.Notification;
window.Notification = class extends Real {
  constructor(title, options) { super(title, options); window.__notes.push([title, options.body]); }
};
"""


def test_a_reminder_in_a_background_tab_counts_in_title_and_icon_and_notifies(nova, open_chat,
                                                                              new_context):
    context = new_context()
    context.grant_permissions(["notifications"], origin=nova.url)
    context.add_init_script(RECORD_NOTIFICATIONS)
    page = open_chat(nova, context)
    page.get_by_label("Notify me of messages from Nova while this tab is in the background").check()
    expect(page.locator("#notify-toggle")).to_be_checked()
    title = page.title()
    page.evaluate(HIDDEN)

    due = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)
    status, _ = nova.api("POST", "/api/characters/nova/reminders",
                         {"text": "Zahnarzt anrufen", "due_at": due.isoformat()})
    assert status == 201
    impulse = page.locator("#message-list .msg-character.origin-own_impulse")
    expect(impulse).to_have_count(1, timeout=30_000)
    expect(page).to_have_title(f"(1) {title}")
    expect(page.locator("link[rel='icon']")).to_have_attribute("href", "/static/badge/1.svg")
    assert wait_for(lambda: page.evaluate("window.__notes.length") == 1)
    [(note_title, body)] = page.evaluate("window.__notes")
    assert note_title == "Nova, unprompted"
    assert body == impulse.locator(".text").text_content()

    page.evaluate(VISIBLE)
    expect(page).to_have_title(title)
    expect(page.locator("link[rel='icon']")).to_have_attribute("href", "/static/icon.svg")
    # The choice stays for the next visit.
    page.reload()
    wait_connected(page)
    expect(page.locator("#notify-toggle")).to_be_checked()
