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
    ("Kannst du mir helfen?", ["Listen", "Erinnerungen", "Tagebuch"]),
    ("Was kann ich mit dir machen?", ["Listen", "Erinnerungen", "Tagebuch"]),
    ("Wer bist du eigentlich?", ["kein Sprachmodell", "Einstellungen"]),
    ("Bist du eine KI?", ["kein Sprachmodell", "Einstellungen"]),
    ("Can you help me?", ["lists", "reminders", "journal"]),
    ("How can you help me?", ["lists", "reminders", "journal"]),
    ("Who are you?", ["No language model", "settings"]),
])
async def test_a_question_about_what_it_can_do_gets_a_real_answer(offline_app, aiohttp_client,
                                                                  question, words):
    chat = await open_chat(aiohttp_client, offline_app)
    answer = (await chat.response(await chat.send(question)))["text"]
    for word in words:
        assert word in answer, (word, answer)
    assert len(answer) < 600


BAD_NEWS_DE = [
    "Ich habe heute meinen Job verloren.", "Meine Oma ist gestern gestorben.",
    "Ich habe solche Angst vor morgen.", "Ich bin total erschöpft und traurig.",
    "Mir geht es heute richtig schlecht.", "Mein Hund ist tot.",
    "Ich hatte einen schlimmen Streit mit meiner Freundin.",
    "Ich habe die Diagnose Krebs bekommen.", "Heute war ein furchtbarer Tag.",
    "Ich bin durch die Prüfung gefallen.", "Meine Freundin hat mit mir Schluss gemacht.",
    "Ich fühle mich so allein.", "Mein Vater liegt im Krankenhaus.",
    "Wir mussten unsere Katze einschläfern lassen.", "Ich wurde heute gekündigt.",
    "Mein Freund hatte einen Unfall.", "Meine Eltern lassen sich scheiden, die Scheidung "
    "ist nächste Woche.", "Heute war die Beerdigung von meinem Opa.",
]
BAD_NEWS_EN = [
    "I lost my job today.", "My grandmother died yesterday.", "I'm so sad and tired.",
    "I failed my exam.", "My girlfriend broke up with me.", "I feel so lonely.",
    "My dad is in hospital.", "I got fired today.", "Today was awful.",
    "I had a terrible fight with my sister.", "I got a cancer diagnosis.", "My dog died.",
    "My friend had an accident.", "My parents are getting a divorce.",
    "The funeral was this morning.", "I was laid off this week.",
]
PLEASANT = {"freude", "begeisterung", "liebe", "dankbarkeit"}


@pytest.mark.parametrize("news, language", [(news, "de") for news in BAD_NEWS_DE]
                         + [(news, "en") for news in BAD_NEWS_EN])
def test_bad_news_gets_a_question_about_the_person_not_about_plans(news, language):
    """Bad news of every kind (a death, an illness, a parting, a job or an exam lost, a
    fight): the reply asks after the person (`heavy`), never about plans or what a word
    means, and never opens as if it were good news — also when the first reply was said."""
    heavy = phrases.PHRASES[language]["heavy"]
    pleasant = [phrases.REFLECT[language][label] for label in PLEASANT]
    first = reflective_reply(news, 500)
    for reply in (first, reflective_reply(news, 500, [first])):
        assert any(reply.endswith(follow_up) for follow_up in heavy), reply
        assert not any(plan in reply for plan in PLAN_QUESTIONS), reply
        assert not any(reply.startswith(opening) for opening in pleasant), reply


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
