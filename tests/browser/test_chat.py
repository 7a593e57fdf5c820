"""The chat in a real browser: send → pending → answer, several tabs, failures and resend,
reload and dropped connections, long texts, Enter and Shift+Enter (design §5, §9)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import (
    TOKEN,
    Nova,
    character_bubbles,
    failure_notices,
    screenshot,
    send,
    user_bubbles,
    wait_connected,
)
from tests.fakemodel import Fault, Reply
from tests.procs import wait_for

pytestmark = pytest.mark.browser

SLOW = 2.5  # seconds the fake model takes, so that the pending state can be seen


def test_send_shows_pending_then_the_answer(nova, fake, open_chat):
    fake.script("responder", Reply("Schön, von dir zu hören!", delay=SLOW))
    page = open_chat(nova)

    send(page, "Hallo Nova")

    mine = user_bubbles(page).filter(has_text="Hallo Nova")
    expect(mine).to_have_count(1)
    expect(mine).to_have_attribute("data-status", "pending")
    expect(mine.locator(".status")).to_have_text("waiting for an answer")
    expect(page.locator("#stage")).to_be_visible()
    expect(page.locator("#stage-text")).to_contain_text("Nova is")
    screenshot(page, "chat-pending")

    answer = character_bubbles(page)
    expect(answer).to_have_count(1)
    expect(answer.locator(".text")).to_have_text("Schön, von dir zu hören!")
    expect(mine).to_have_attribute("data-status", "answered")
    expect(mine.locator(".status")).to_have_count(0)
    expect(page.locator("#stage")).to_be_hidden()
    # The answer names the message it answers, and this tab sent it: no "other tab" label.
    message_id = mine.get_attribute("data-message-ids")
    assert answer.get_attribute("data-message-ids") == message_id
    expect(answer.locator(".badge-other")).to_have_count(0)
    assert page.evaluate("window.novaberg.conversation.openIds()") == []
    screenshot(page, "chat-answered")


def test_enter_sends_shift_enter_breaks_the_line_and_long_texts_stay_whole(nova, fake, open_chat):
    long_answer = " ".join(f"Satz {i} der langen Antwort." for i in range(400))
    fake.script("responder", Reply(long_answer))
    page = open_chat(nova)
    box = page.locator("#composer-input")

    box.press_sequentially("erste Zeile")
    box.press("Shift+Enter")
    box.press_sequentially("zweite Zeile")
    expect(box).to_have_value("erste Zeile\nzweite Zeile")
    expect(user_bubbles(page)).to_have_count(0)  # Shift+Enter did not send

    long_question = "\n".join(f"Zeile {i}: " + "wort " * 12 for i in range(60))
    box.fill(long_question)
    box.press("Enter")
    expect(box).to_have_value("")

    question = user_bubbles(page)
    expect(question).to_have_count(1)
    expect(failure_notices(page)).to_have_count(0)
    expect(character_bubbles(page)).to_have_count(1)
    # Shown whole: every character of both texts is in the page, nothing cut or hidden.
    assert question.locator(".text").text_content() == long_question.strip()
    assert character_bubbles(page).locator(".text").text_content() == long_answer
    # And the question the model got was whole, too.
    assert any("Zeile 59:" in str(chat.messages) for chat in fake.chats("responder"))
    bubble = question.locator(".text").bounding_box()
    assert bubble is not None and bubble["height"] > 60 * 10  # 60 lines laid out, not clipped


def test_two_tabs_of_one_browser_are_one_person_another_browser_is_not(nova, fake, open_chat,
                                                                       new_context):
    fake.script("responder", Reply("Antwort für beide Tabs", delay=1.0))
    context = new_context()
    first = open_chat(nova, context)
    second = open_chat(nova, context)
    elsewhere = open_chat(nova)  # a context of its own: another browser, its own storage

    send(first, "Nachricht aus Tab eins")

    for page in (first, second, elsewhere):
        expect(user_bubbles(page).filter(has_text="Nachricht aus Tab eins")).to_have_count(1)
        expect(character_bubbles(page).filter(has_text="Antwort für beide Tabs")).to_have_count(1)
    # Both tabs of the browser that sent it show it plainly as the user's own ...
    for page in (first, second):
        expect(user_bubbles(page)).to_have_class("msg msg-user mine")
        expect(user_bubbles(page).locator(".who")).to_have_text("You")
        expect(character_bubbles(page).locator(".badge-other")).to_have_count(0)
    # ... and only a truly other client says where it came from.
    expect(user_bubbles(elsewhere)).to_have_class("msg msg-user other")
    expect(user_bubbles(elsewhere).locator(".who")).to_have_text("You (another device or browser)")
    expect(character_bubbles(elsewhere).locator(".badge-other")).to_have_text(
        "answer to a message from another device or browser")
    screenshot(second, "chat-second-tab")
    screenshot(elsewhere, "chat-other-browser")


def test_a_model_failure_shows_the_notice_and_resend_works(nova, fake, open_chat):
    # Three 500s: the first try and both retries (model_retries = 2) fail.
    fake.script("responder", Fault.status(500), Fault.status(500), Fault.status(500),
                Reply("Jetzt klappt es."))
    page = open_chat(nova)

    send(page, "Bist du da?")

    notice = failure_notices(page)
    expect(notice).to_have_count(1)
    expect(notice.locator(".title")).to_have_text("No answer to this message")
    expect(notice.locator(".reason")).to_contain_text("model_http_error")
    expect(notice).to_have_attribute("data-reason", "model_http_error")
    question = user_bubbles(page).filter(has_text="Bist du da?")
    expect(question).to_have_attribute("data-status", "failed")
    assert notice.get_attribute("data-message-ids") == question.get_attribute("data-message-ids")
    assert page.evaluate("window.novaberg.conversation.openIds()") == []
    screenshot(page, "chat-failure")

    notice.get_by_role("button", name="Resend").click()

    expect(notice.get_by_role("button", name="Resend")).to_have_count(0)
    expect(notice.locator(".resent")).to_have_text("Sent again")
    expect(user_bubbles(page).filter(has_text="Bist du da?")).to_have_count(2)
    expect(character_bubbles(page).filter(has_text="Jetzt klappt es.")).to_have_count(1)
    resent = user_bubbles(page).nth(1)
    expect(resent).to_have_attribute("data-status", "answered")
    screenshot(page, "chat-resent")


def test_reload_keeps_the_conversation_and_the_pending_message(nova, fake, open_chat):
    fake.script("responder", Reply("Erste Antwort"), Reply("Zweite Antwort", delay=2 * SLOW))
    page = open_chat(nova)
    send(page, "Erste Frage")
    expect(character_bubbles(page)).to_have_count(1)
    send(page, "Zweite Frage")
    expect(user_bubbles(page).nth(1)).to_have_attribute("data-status", "pending")

    page.reload()
    wait_connected(page)

    # Everything is back, once, in order, and the second question still waits.
    expect(user_bubbles(page)).to_have_count(2)
    texts = [t.strip() for t in user_bubbles(page).locator(".text").all_text_contents()]
    assert texts == ["Erste Frage", "Zweite Frage"]
    expect(user_bubbles(page).nth(1)).to_have_attribute("data-status", "pending")
    screenshot(page, "chat-reloaded-pending")
    expect(character_bubbles(page).nth(0).locator(".text")).to_have_text("Erste Antwort")
    expect(character_bubbles(page).filter(has_text="Zweite Antwort")).to_have_count(1)
    expect(user_bubbles(page).nth(1)).to_have_attribute("data-status", "answered")
    expect(character_bubbles(page)).to_have_count(2)

    page.reload()
    wait_connected(page)
    expect(user_bubbles(page)).to_have_count(2)
    expect(character_bubbles(page)).to_have_count(2)


def test_a_dropped_connection_loses_and_duplicates_nothing(nova, fake, open_chat):
    fake.script("responder", Reply("Während du weg warst", delay=1.0))
    page = open_chat(nova)
    send(page, "Ich gehe kurz offline")
    question = user_bubbles(page)
    expect(question).to_have_attribute("data-status", "pending")
    message_id = question.get_attribute("data-message-ids")

    # The connection drops and stays down while the answer is delivered.
    page.evaluate("window.novaberg.socket.stop()")
    assert wait_for(lambda: nova.api("GET", f"/api/messages/{message_id}")[1]["state"]
                    == "delivered", timeout=20)
    expect(character_bubbles(page)).to_have_count(0)

    page.evaluate("window.novaberg.socket.start()")
    wait_connected(page)

    expect(character_bubbles(page)).to_have_count(1)
    expect(character_bubbles(page).locator(".text")).to_have_text("Während du weg warst")
    expect(question).to_have_attribute("data-status", "answered")
    expect(user_bubbles(page)).to_have_count(1)
    assert page.evaluate("window.novaberg.conversation.openIds()") == []

    # A second reconnect (the real close path, with backoff) changes nothing.
    page.evaluate("window.novaberg.socket.drop()")
    expect(page.locator("#connection")).to_have_attribute("data-state", "reconnecting")
    wait_connected(page)
    expect(user_bubbles(page)).to_have_count(1)
    expect(character_bubbles(page)).to_have_count(1)


def test_a_server_crash_mid_turn_ends_in_one_answer_after_the_restart(nova, fake, open_chat):
    fake.script("responder", Reply("Nie zu sehen", delay=30))  # the crashed run's call
    fake.always("responder", Reply("Nach dem Neustart"))
    page = open_chat(nova)
    send(page, "Gleich stürzt der Server ab")
    question = user_bubbles(page)
    expect(question).to_have_attribute("data-status", "pending")
    assert wait_for(lambda: len(fake.chats("responder")) == 1, timeout=20)  # in path 2 now

    nova.kill()  # SIGKILL: no goodbye to the browser, the turn is left in path 2
    expect(page.locator("#connection")).to_have_attribute("data-state", "reconnecting")
    restarted = Nova(nova.data_dir, token=TOKEN, port=nova.port, env=nova.env).start()
    try:
        wait_connected(page)
        # Recovery runs the turn again; the tab, reconnected, shows its answer once.
        expect(character_bubbles(page).locator(".text")).to_have_text("Nach dem Neustart")
        expect(question).to_have_attribute("data-status", "answered")
        expect(user_bubbles(page)).to_have_count(1)
        expect(failure_notices(page)).to_have_count(0)
        page.reload()
        wait_connected(page)
        expect(user_bubbles(page)).to_have_count(1)
        expect(character_bubbles(page)).to_have_count(1)
    finally:
        restarted.stop()


def test_a_refused_message_keeps_its_text_says_why_and_can_be_retried(nova, fake, open_chat):
    too_long = "x" * 20001  # MAX_MESSAGE_CHARS is 20000
    page = open_chat(nova, locale="de-DE")
    send(page, too_long)

    refused = user_bubbles(page)
    expect(refused).to_have_attribute("data-status", "unsent")
    expect(refused.locator(".status")).to_have_text("nicht gesendet: die Nachricht ist zu lang")
    assert refused.locator(".text").text_content() == too_long  # kept whole, nothing lost
    expect(refused.get_by_role("button", name="Erneut senden")).to_be_visible()
    assert fake.chats() == []
    screenshot(page, "chat-refused")

    # The server stays refusing; the retry says so again and still keeps the text.
    refused.get_by_role("button", name="Erneut senden").click()
    expect(refused).to_have_attribute("data-status", "unsent")
    expect(user_bubbles(page)).to_have_count(1)
    page.reload()
    wait_connected(page)
    expect(user_bubbles(page)).to_have_attribute("data-status", "unsent")
    assert user_bubbles(page).locator(".text").text_content() == too_long
