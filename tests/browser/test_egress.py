"""Settings → Privacy → "What left this machine" in a real browser (issue 39 item 5): after
messages full of registered names to a remote endpoint (the fake model server, marked
remote), the day in one line — calls, where to, names masked, none refused — the calls
listed with no name in them, a filter by purpose, the export links, and clearing behind the
confirm dialog; German too."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import character_bubbles, screenshot, send, wait_connected

pytestmark = pytest.mark.browser

PEOPLE = [{"name": "Annegret Wolkenstein", "aliases": ["Anne"]}, {"name": "Onkel Bertram"}]


def remote_nova(start_nova, fake):
    return start_nova(config={**fake.config(), "llm_remote": True})


def open_panel(page, settings="Settings", tab="Privacy"):
    page.get_by_role("button", name=settings).click()
    page.get_by_role("dialog", name=settings).get_by_role("tab", name=tab).click()
    panel = page.get_by_role("tabpanel", name=tab)
    expect(panel).to_be_visible()
    return panel


def test_the_day_is_shown_filtered_exported_and_cleared(start_nova, fake, open_chat):
    nova = remote_nova(start_nova, fake)
    assert nova.api("PUT", "/api/privacy/identities", {"people": PEOPLE})[0] == 200
    page = open_chat(nova)
    for n, text in enumerate(["Annegret Wolkenstein war heute da.",
                              "Onkel Bertram und Anne kommen morgen."], start=1):
        send(page, text)
        expect(character_bubbles(page)).to_have_count(n)
    calls = len(fake.chats())
    endpoint = fake.url.removeprefix("http://").rstrip("/")

    panel = open_panel(page)
    summary = page.locator("#egress-summary")
    expect(summary).to_have_text(re.compile(
        rf"^Today: {calls} calls to {re.escape(endpoint)}; \d+ names? masked, 0 refused\.$"))
    lines = panel.locator("#egress-calls li")
    expect(lines).to_have_count(min(calls, 50))
    shown = " ".join(lines.all_inner_texts()).casefold()
    assert "annegret" not in shown and "bertram" not in shown and "[person" not in shown
    summary.scroll_into_view_if_needed()
    screenshot(page, "egress-log")

    purposes = [o for o in panel.locator("#egress-purpose option").all_inner_texts()
                if o != "All purposes"]
    assert purposes
    panel.get_by_label("Purpose").select_option(purposes[0])
    link = panel.get_by_role("link", name="Export (CSV)")
    # The links follow the filter once its day has loaded.
    expect(link).to_have_attribute("href", re.compile(rf"format=csv.*purpose={purposes[0]}$"))
    expect(summary).to_contain_text("Today: ")
    href = link.get_attribute("href") or ""
    status, exported = nova.api("GET", href.replace("format=csv", "format=json"))
    assert status == 200 and exported and {c["purpose"] for c in exported} == {purposes[0]}

    panel.get_by_role("button", name="Clear log…").click()
    dialog = page.get_by_role("dialog", name="Clear the log?")
    dialog.get_by_role("button", name="Cancel").click()
    expect(lines.first).to_be_visible()
    panel.get_by_role("button", name="Clear log…").click()
    dialog.get_by_role("button", name="Clear log").click()
    expect(page.locator("#egress-status")).to_contain_text("Log cleared")
    expect(summary).to_have_text("Today: nothing left this machine.")
    assert nova.api("GET", "/api/privacy/egress")[1]["summary"]["calls"] == 0


def test_the_log_speaks_german_and_marks_a_local_endpoint(nova, fake, open_chat):
    page = open_chat(nova, locale="de-DE")
    send(page, "Hallo!")
    expect(character_bubbles(page)).to_have_count(1)
    wait_connected(page)
    panel = open_panel(page, "Einstellungen", "Privatsphäre")
    expect(panel.get_by_role("heading", name="Was diesen Rechner verlassen hat")).to_be_visible()
    expect(page.locator("#egress-summary")).to_contain_text("(lokal); nichts maskiert, 0 abgelehnt.")
    expect(panel.locator("#egress-calls li").first).to_contain_text("lokal: nichts maskiert")
