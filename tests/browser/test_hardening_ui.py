"""Issue 11 in the browser: the reminder form refuses a past time (and its status clears
after a success); the composer shows the model's message limit before sending."""

from __future__ import annotations

import datetime as dt

from playwright.sync_api import expect

from tests.browser.helpers import Nova, screenshot


def local_input(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def test_the_reminder_form_refuses_a_past_time_and_its_status_clears(nova: Nova, open_chat):
    page = open_chat(nova)
    page.fill("#reminder-text", "Zahnarzt")
    page.fill("#reminder-due", local_input(dt.datetime.now() - dt.timedelta(hours=2)))
    page.click("#reminder-form button[type=submit]")
    expect(page.locator("#reminder-status")).to_contain_text("passed already")
    status, stored = nova.api("GET", "/api/characters/nova/reminders")
    assert status == 200 and stored == []

    page.fill("#reminder-due", local_input(dt.datetime.now() + dt.timedelta(hours=2)))
    page.click("#reminder-form button[type=submit]")
    expect(page.locator("#reminder-status")).to_have_text("Reminder added.")
    expect(page.locator("#reminder-status")).to_have_text("", timeout=8000)
    status, stored = nova.api("GET", "/api/characters/nova/reminders")
    assert [r["text"] for r in stored] == ["Zahnarzt"]
    screenshot(page, "hardening-reminder-form")


def test_the_composer_shows_the_models_message_limit(start_nova, open_chat):
    nova = start_nova(offline=True)
    status, info = nova.api("GET", "/api/llm")
    limit = info["message_limit"]
    page = open_chat(nova)
    hint = page.locator("#composer-limit")
    page.fill("#composer-input", "kurz")
    expect(hint).to_be_hidden()
    page.fill("#composer-input", "x" * (limit + 1))
    page.dispatch_event("#composer-input", "input")
    expect(hint).to_be_visible()
    expect(hint).to_contain_text(str(limit))
    expect(hint).to_have_attribute("data-over", "true")
