"""The tribunal: its validators one by one, and its outcome through the real server
(the corrector fixing a leaked label, a deterministic strip, a rejection naming the reason)."""

from __future__ import annotations

import logging

import pytest

from app.core.settings import defaults
from app.pipeline import tribunal
from app.pipeline.prompts import PromptLibrary
from tests.pipeline_support import fake_app, last_user_message, open_chat, purposes


def check(text: str, *, previous: str = "", language: str = "de",
          instructions: list[str] | None = None) -> list[str]:
    return [f.code for f in tribunal.validate(text, character_name="Nova", previous=previous,
                                              expected_language=language,
                                              instruction_parts=instructions or [])]


@pytest.mark.parametrize("text", [
    "NOVA: Hallo du!",
    "Nova: Hallo du!",
    "[2] NOVA (freude): Hallo du!",
    "Hallo du!\nUSER: Und dir?",
    "Hallo du! (von sich aus)",
    "Ich wollte noch was sagen (freude, von sich aus).",
    "Das war gut (Anlass unbekannt).",
    "Ich habe es notiert [ERLEDIGT].",
    "Milch ist drauf (neutral, ERLEDIGT).",
    "Hi there (on their own)!",
])
def test_a_speaker_label_or_marker_in_the_text_is_a_hard_finding(text):
    assert "speaker_label" in check(text)
    cleaned = tribunal.strip_labels(text, "Nova")
    assert not tribunal.has_label(cleaned, "Nova")
    assert cleaned.strip()


@pytest.mark.parametrize("text", [
    "Das ist erledigt, die Milch steht drauf.",
    "Nova ist mein Name, und ich freue mich.",
    "Ich habe von mir aus nachgesehen.",
    "Die Liste (Wocheneinkauf) hat drei Einträge.",
    "Uhrzeit: 10:30, passt das?",
])
def test_ordinary_text_has_no_label_finding(text):
    assert "speaker_label" not in check(text)


def test_strip_labels_keeps_the_words_around_them():
    assert tribunal.strip_labels("[3] NOVA (von sich aus): Hallo du!", "Nova") == "Hallo du!"
    assert tribunal.strip_labels("Hallo (von sich aus) du!", "Nova") == "Hallo du!"


def test_empty_is_hard_and_nothing_else_is_checked():
    assert check("") == ["empty"]
    assert check("   \n ") == ["empty"]


def test_a_frame_title_or_an_instruction_sentence_is_a_prompt_leak():
    settings = defaults(data_dir="/nonexistent")
    system = PromptLibrary(settings).system("responder", "de", persona="Du bist Nova.",
                                            character_name="Nova", interaction_hint="")
    sentences = tribunal.instruction_sentences([system])
    leaked = "Klar! Was im Block „Was du gerade erledigt hast“ steht, ist wirklich geschehen"
    assert "prompt_leak" in check(leaked, instructions=sentences)
    assert "prompt_leak" in check("### Verlauf\n[1] USER: hi")
    assert "prompt_leak" in check("Hier:\n### Conversation", language="en")
    assert "prompt_leak" not in check("Im Verlauf des Tages wurde es besser.",
                                      instructions=sentences)


def test_repeating_the_previous_answer_is_soft():
    previous = "Das tut mir leid. Magst du erzählen, was passiert ist?"
    assert check(previous, previous=previous) == ["repeat"]
    assert check(previous + " Ich bin da.", previous=previous) == ["repeat"]
    assert check("Magst du erzählen, was passiert ist? Das tut mir leid.",
                 previous=previous) == []
    assert not tribunal.Finding("repeat", "").hard


def test_the_wrong_language_is_soft_and_short_texts_are_not_judged():
    assert check("This is not what you wanted to hear, I am afraid.") == ["language"]
    assert check("Okay, super!") == []
    assert check("Das ist auf Deutsch geschrieben, wie es sich gehört.", language="de") == []
    assert check("Das ist auf Deutsch geschrieben, wie es sich gehört.", language="fr") == []


# --- through the server ------------------------------------------------------------------------

async def test_the_corrector_fixes_a_leaked_label(fake_model, make_settings, aiohttp_client):
    fake_model.script("responder", "NOVA (von sich aus): Schön, dass du da bist!")
    fake_model.script("corrector", "Schön, dass du da bist!")
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))

    sent = await chat.send("Hallo Nova")
    answer = await chat.response(sent)
    await chat.settle()

    assert answer["text"] == "Schön, dass du da bist!"
    assert purposes(fake_model)[-3:] == ["thinker", "corrector", "salience_character"]
    shown = last_user_message(fake_model.chats("corrector")[0])
    assert "speaker_label" in shown and "NOVA (von sich aus): Schön" in shown
    assert (await chat.session())[1]["inhalt"] == "Schön, dass du da bist!"


async def test_a_rewrite_that_still_leaks_a_label_is_cleaned_deterministically(
        fake_model, make_settings, aiohttp_client):
    fake_model.script("responder", "[1] NOVA: Gern geschehen!")
    fake_model.script("corrector", "NOVA: Gern geschehen!")
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))

    sent = await chat.send("Danke dir")
    answer = await chat.response(sent)

    assert answer["text"] == "Gern geschehen!"


async def test_an_answer_that_stays_empty_fails_the_turn_with_a_reason(
        fake_model, make_settings, aiohttp_client):
    fake_model.script("responder", "   ")
    fake_model.script("corrector", "")
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))

    sent = await chat.send("Hallo?")
    failed = await chat.failure(sent)
    await chat.settle()

    assert failed["reason"] == "tribunal_rejected" and failed["message_ids"] == [sent]
    assert [t["rolle"] for t in await chat.session()] == ["user"]  # nothing half-written


async def test_a_leaking_answer_the_corrector_cannot_fix_is_rejected(
        fake_model, make_settings, aiohttp_client):
    leak = "### Verlauf\n[1] USER: Hallo?"
    fake_model.script("responder", leak)
    fake_model.script("corrector", leak)
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))

    sent = await chat.send("Hallo?")
    failed = await chat.failure(sent)

    assert failed["reason"] == "tribunal_rejected"


async def test_soft_findings_are_delivered(fake_model, make_settings, aiohttp_client, caplog):
    caplog.set_level(logging.INFO, logger="app.pipeline.answering")
    fake_model.always("responder", "This answer is in English although we speak German.")
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))

    sent = await chat.send("Wie war dein Tag?")
    answer = await chat.response(sent)

    assert answer["text"] == "This answer is in English although we speak German."
    assert "corrector" not in purposes(fake_model)
    assert any(getattr(r, "fields", {}).get("code") == "language" for r in caplog.records)
