"""The Journal view in a real browser (issue 13): write an entry for a day with progress for
both stages, see the sources, edit, restore an old version, delete and undo; the fallback
note in German on a phone-sized dark page; each sentence's lines, what the check left out,
and the versions' own edits (issue 40)."""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import PHONE, screenshot
from tests.fakemodel import Fault, Reply

pytestmark = pytest.mark.browser

DATE = "2026-03-01"
DAY = "Sunday, March 1, 2026"  # as the page writes the date (Intl, the user's language)
LINES = [
    {"role": "assistant", "text": "Guten Morgen! Wie hast du geschlafen?"},
    {"role": "user", "text": "Um 6:00 Uhr bin ich aufgestanden, müde."},
    {"role": "user", "text": "Zum Frühstück gab es Brot mit Anna."},
    {"role": "user", "text": "Abends habe ich gelesen."},
]
RECONSTRUCTION = {
    "source_order": ["u1", "u2", "u3"],
    "chronology": [{"source_id": f"u{i}", "source": "user", "time": None, "claims": []}
                   for i in (1, 2, 3)],
}
DRAFT = "Ich bin um 6:00 Uhr müde aufgestanden, zum Frühstück gab es Brot mit Anna, abends habe ich gelesen."


def import_day(nova) -> None:
    status, body = nova.api("POST", "/api/journal/import", {"date": DATE, "messages": LINES})
    assert status == 201, body


def test_write_an_entry_edit_restore_delete_and_undo(nova, fake, open_chat):
    import_day(nova)
    # Each stage's model answer is held until the page has shown that stage as running:
    # the page must show it, however fast the stage or slow the machine.
    reconstructing, narrating = threading.Event(), threading.Event()
    fake.script("journal_reconstruct", Reply(RECONSTRUCTION, hold=reconstructing))
    fake.script("journal_generate", Reply(DRAFT, hold=narrating))
    page = open_chat(nova)

    page.locator("#view-journal").click()
    expect(page.locator("#chat-layout")).to_be_hidden()
    day = page.locator(".journal-day-button", has_text=DAY)
    expect(page.locator("#journal-day-title")).to_have_text(DAY)
    expect(day).to_contain_text("3 of your messages")
    expect(day).to_have_attribute("aria-current", "date")
    expect(page.locator(".journal-line")).to_have_count(4)

    # Every stage the page shows as running, in the order it shows them: it never goes back
    # to an earlier one (a poll's late answer must not undo what the socket said).
    page.evaluate("""() => {
        window.stagesShown = [];
        new MutationObserver(() => {
            const current = document.querySelector('#journal-progress li.current');
            const text = current ? current.textContent : null;
            if (text && window.stagesShown.at(-1) !== text) window.stagesShown.push(text);
        }).observe(document.querySelector('#journal-progress'),
                   { childList: true, subtree: true });
    }""")
    page.locator("#journal-write").click()
    progress = page.locator("#journal-progress")
    expect(progress.locator("li.current")).to_have_text("Reconstructing the day")
    expect(progress.locator("li")).to_have_text(
        ["Reconstructing the day", "Writing the entry", "Draft ready"])
    screenshot(page, "journal-reconstruct")
    reconstructing.set()
    expect(progress.locator("li.current")).to_have_text("Writing the entry")
    expect(progress.locator("li.done")).to_have_text(["Day reconstructed"])

    # An answer to the page's poll that left the server before the socket's news: the
    # page stays at the stage it knows.
    def an_older_state(route):
        response = route.fetch()
        route.fulfill(response=response, json={**response.json(), "state": "reconstruct"})

    page.route("**/api/journal/jobs/*", an_older_state)
    with page.expect_request_finished(lambda request: "/api/journal/jobs/" in request.url):
        pass
    expect(progress.locator("li.current")).to_have_text("Writing the entry")
    page.unroute("**/api/journal/jobs/*")
    narrating.set()

    # The text as it reads (each sentence's tooltip, hidden, is no part of it).
    expect(page.locator("#journal-draft-text")).to_have_text(DRAFT, use_inner_text=True)
    assert page.evaluate("window.stagesShown") == ["Reconstructing the day",
                                                   "Writing the entry"]
    expect(progress.locator("li.done")).to_have_count(3)
    expect(page.locator("#journal-fallback")).to_be_hidden()
    # Finished stages in the past tense.
    expect(progress).to_have_text("Day reconstructedEntry writtenDraft ready")

    sources = page.locator(".journal-source")
    expect(sources).to_have_text(["u1", "u2", "u3"])
    sources.nth(1).hover()
    expect(sources.nth(1)).to_have_attribute("title", "Zum Frühstück gab es Brot mit Anna.")
    highlighted = page.locator(".journal-line.highlight")
    expect(highlighted).to_have_count(1)
    expect(highlighted).to_contain_text("Zum Frühstück gab es Brot mit Anna.")
    screenshot(page, "journal-draft")

    page.locator("#journal-draft-accept").click()
    entry = page.locator("#journal-entry-text")
    expect(entry).to_have_value(DRAFT)
    expect(page.locator("#journal-versions li")).to_have_count(1)
    expect(day).to_contain_text("entry")

    entry.fill("Zweite Fassung, von Hand.")
    page.locator("#journal-entry-save").click()
    expect(page.locator("#journal-entry-status")).to_have_text("Saved.")
    expect(page.locator("#journal-versions li")).to_have_count(2)

    page.locator(".journal-restore").click()  # the only other version: the draft's
    expect(entry).to_have_value(DRAFT)
    versions = page.locator("#journal-versions li")
    expect(versions).to_have_count(3)
    expect(versions.first).to_contain_text("restored")
    screenshot(page, "journal-versions")

    page.locator("#journal-entry-delete").click()
    expect(page.locator("#journal-undo")).to_be_visible()
    expect(entry).to_have_value("")
    status, trash = nova.api("GET", "/api/journal/trash")
    assert status == 200 and len(trash) == 1
    page.locator("#journal-undo-button").click()
    expect(entry).to_have_value(DRAFT)
    expect(page.locator("#journal-undo")).to_be_hidden()
    status, trash = nova.api("GET", "/api/journal/trash")
    assert trash == []

    page.locator("#view-chat").click()
    expect(page.locator("#chat-layout")).to_be_visible()
    expect(page.locator("#journal-view")).to_be_hidden()


def test_the_fallback_is_explained_in_german_on_a_dark_phone(nova, fake, open_chat):
    import_day(nova)
    invalid = {**RECONSTRUCTION, "source_order": ["u2", "u1", "u3"]}
    fake.script("journal_reconstruct", invalid)
    fake.script("journal_generate", DRAFT)
    page = open_chat(nova, locale="de-DE", color_scheme="dark", viewport=PHONE)
    page.locator("#view-journal").click()
    expect(page.locator("#view-journal")).to_have_text("Tagebuch")
    expect(page.locator(".journal-day-button")).to_contain_text("3 deiner Nachrichten")
    page.locator("#journal-write").click()
    note = page.locator("#journal-fallback")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Rekonstruktion")
    expect(note).to_contain_text("order_changed")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 23, 27)"  # the dark palette
    screenshot(page, "journal-fallback-de-dark-phone")


def test_a_failed_job_says_why_and_keeps_the_day(nova, fake, open_chat):
    import_day(nova)
    reconstructing = threading.Event()
    fake.script("journal_reconstruct", Fault("context_length", 400, hold=reconstructing))
    page = open_chat(nova)
    page.locator("#view-journal").click()
    page.locator("#journal-write").click()
    progress = page.locator("#journal-progress")
    expect(progress.locator("li.current")).to_have_text("Reconstructing the day")
    reconstructing.set()
    expect(page.locator(".journal-error")).to_have_text(
        "No draft: the model server refused the day as too long")
    # The stage it stopped in stays in view, marked failed; nothing shows as done.
    expect(progress.locator("li.failed")).to_have_text("Reconstructing the day")
    expect(progress.locator("li.done, li.current")).to_have_count(0)
    expect(page.locator("#journal-write")).to_be_enabled()
    expect(page.locator("#journal-draft")).to_be_hidden()
    expect(page.locator(".journal-line")).to_have_count(4)


INVENTED = "Danach war ich mit Paul im Kino."


def test_each_sentence_shows_its_lines_and_what_was_left_out_says_why(nova, fake, open_chat):
    """Issue 40: the draft's sentence is described by the lines it came from (focus, hover
    or tap shows them; Escape hides them), the model's invented sentence is not in the
    draft but listed as not in the user's words with what no line holds, and the version
    the user changed marks the sentence that is the user's own."""
    import_day(nova)
    fake.script("journal_reconstruct", RECONSTRUCTION)
    # The model invents a sentence, and keeps it when asked once to leave it out.
    fake.script("journal_generate", f"{DRAFT} {INVENTED}", f"{DRAFT} {INVENTED}")
    page = open_chat(nova)
    page.locator("#view-journal").click()
    page.locator("#journal-write").click()
    text = page.locator("#journal-draft-text")
    expect(text).to_have_text(DRAFT, use_inner_text=True)

    sentence = text.locator(".journal-sentence")
    expect(sentence).to_have_count(1)
    tip = page.locator("#journal-draft-s-0")
    expect(sentence).to_have_attribute("aria-describedby", "journal-draft-s-0")
    expect(tip).to_have_attribute("role", "tooltip")
    expect(tip).to_be_hidden()
    sentence.focus()  # the keyboard's way
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("From your lines:")
    for line in LINES[1:]:
        expect(tip).to_contain_text(line["text"])
    expect(page.locator(".journal-line.highlight")).to_have_count(3)
    screenshot(page, "journal-sentence-lines")
    page.keyboard.press("Escape")
    expect(tip).to_be_hidden()
    page.locator("#journal-write").focus()
    expect(page.locator(".journal-line.highlight")).to_have_count(0)
    sentence.dispatch_event("click")  # a tap: it focuses the sentence
    expect(tip).to_be_visible()
    page.locator("#journal-day-title").click()
    expect(tip).to_be_hidden()
    sentence.hover()  # the mouse's way
    expect(tip).to_be_visible()

    left = page.locator("#journal-not-in-words")
    expect(left).to_be_visible()
    expect(left.locator("h4")).to_have_text("Not in your words")
    expect(left.locator("li")).to_have_text(f"{INVENTED} — in none of your lines: Paul, Kino")
    assert INVENTED not in text.inner_text()

    page.locator("#journal-draft-accept").click()
    entry = page.locator("#journal-entry-text")
    expect(entry).to_have_value(DRAFT)
    entry.fill(f"{DRAFT} Später kam Anna vorbei.")
    page.locator("#journal-entry-save").click()
    versions = page.locator("#journal-versions li")
    expect(versions).to_have_count(2)
    newest = versions.first
    expect(newest).to_contain_text("1 sentence your own")
    expect(newest.locator("mark.journal-edit")).to_have_text("your edit: Später kam Anna vorbei.")
    expect(newest.locator(".journal-sentence")).to_have_count(1)  # the draft's, with its lines
    expect(versions.nth(1).locator("mark")).to_have_count(0)  # taken over as it was
    expect(page.locator("#journal-versions-legend")).to_be_visible()
    screenshot(page, "journal-version-edits")
