"""Issue 21, item 3: the offline model without a model server is honest and a little
helpful — a direct question about what the character can do gets a short real answer, bad
news is not answered with a question about plans, and no reply comes twice in a day (also
beyond the history window the prompt shows). Through the real app with the offline model."""

from __future__ import annotations

import pytest

from app.llm.offline import phrases
from app.llm.offline.handlers import reflective_reply
from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.pipeline_support import open_chat

PLAN_QUESTIONS = [phrases.PHRASES["de"]["ask"][3], phrases.PHRASES["en"]["ask"][3],
                  "Was bedeutet", "What does"]


@pytest.fixture
def offline_app(make_settings):
    # A small window: the day's replies must not repeat beyond what the prompt shows.
    return create_app(make_settings(llm_provider="offline", session_window_exchanges=2),
                      local_token=TOKEN)


@pytest.mark.parametrize("question, words", [
    ("Was kannst du eigentlich?", ["Listen", "Erinnerungen", "Tagebuch", "Einstellungen",
                                  "kein Sprachmodell"]),
    ("Wobei kannst du mir helfen?", ["Listen", "Erinnerungen", "Tagebuch"]),
    ("Welches Modell bist du?", ["kein Sprachmodell", "Einstellungen"]),
    ("What can you do?", ["lists", "reminders", "journal", "settings", "No language model"]),
    ("Are you an AI?", ["No language model", "settings"]),
])
async def test_a_question_about_what_it_can_do_gets_a_real_answer(offline_app, aiohttp_client,
                                                                  question, words):
    chat = await open_chat(aiohttp_client, offline_app)
    answer = (await chat.response(await chat.send(question)))["text"]
    for word in words:
        assert word in answer, (word, answer)
    assert len(answer) < 600


@pytest.mark.parametrize("news", [
    "Ich habe heute meinen Job verloren.", "Meine Oma ist gestern gestorben.",
    "Ich habe solche Angst vor morgen.", "Ich bin total erschöpft und traurig.",
    "I lost my job today.", "My grandmother died yesterday.", "I'm so sad and tired.",
])
def test_bad_news_is_not_answered_with_a_question_about_plans(news):
    for previous in ((), [reflective_reply(news, 500)]):
        reply = reflective_reply(news, 500, previous)
        assert not any(plan in reply for plan in PLAN_QUESTIONS), reply


async def test_no_reply_comes_twice_in_a_day(offline_app, aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)
    texts = ["Ich war heute einkaufen.", "Das Wetter war okay.", "Ich war heute einkaufen.",
             "Ich bin traurig.", "Ich bin traurig.", "Hm.", "Hm.", "Okay.", "Okay.",
             "Was denkst du?", "Was denkst du?", "Ich war heute einkaufen.", "Ich bin traurig.",
             "Hallo", "Hallo", "Wie geht es dir?", "Wie geht es dir?", "Was kannst du?",
             "Was kannst du?", "Hm."]
    answers = [(await chat.response(await chat.send(text)))["text"] for text in texts]
    repeated = {a for a in answers if answers.count(a) > 1}
    assert not repeated, repeated
