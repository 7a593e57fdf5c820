"""Issue 21, item 3, as a class: long narratives in German and English, composed from
sentences that each mention an agent's trigger words in passing (lists and their items,
writing down, crossing off, remembering, reminders, moving and deleting appointments — in
past tense, reported speech, quotations, idioms, questions to the character that ask for no
action), ask for nothing, however the sentences are ordered and joined. The same narratives
with one real command set in anywhere ask for exactly that command's agent, so the rule is
about the command, not about the length. Through the offline rules (hypothesis) and through
the whole app with the offline model (a table of composed narratives)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.api.app_keys import REDIS
from app.memory.lists import ListStore
from app.memory.reminders import ReminderStore
from app.pipeline.offline_rules.routing import Known, agents_for, split_tasks
from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.pipeline_support import open_chat

KNOWN = Known.of("- Einkaufsliste: Milch, Eier, Brot\n- Baumarkt: Schrauben\n"
                 "- shopping list: eggs, bread, milk",
                 "- Zahnarzt — 2026-12-01T09:00:00+01:00 (Dienstag)\n"
                 "- Call mum — 2026-12-02T15:00:00+01:00 (Mittwoch)\n"
                 "- dentist — 2026-12-03T10:00:00+01:00 (Donnerstag)")
LENGTH = 2000  # the account of a hard day: about 2 000 characters

PASSING_DE = [
    "Gestern habe ich die Eier von der Einkaufsliste gestrichen, weil wir doch noch welche "
    "hatten.",
    "Meine Chefin hat gesagt, ich soll alles auf die Liste setzen, was noch offen ist.",
    "Ich schreibe dir das, weil ich sonst niemanden zum Reden habe.",
    "Erinnerst du dich, wie ich letzte Woche noch dachte, es wird besser?",
    "Die Erinnerung an den Zahnarzt morgen um neun macht mir jetzt schon Bauchweh.",
    "Mein Bruder hat den Termin beim Zahnarzt auf Freitag verschoben, ohne mich zu fragen.",
    "Im Büro hängt eine lange Liste mit Aufgaben, die niemand streichen will.",
    "Ich habe mir notiert, dass ich Milch und Brot kaufen muss, und dann doch alles vergessen.",
    "Mama sagt immer: „Schreib dir das auf, sonst vergisst du es.“",
    "Dann setz ich mich aufs Sofa und starre an die Wand.",
    "Und dann schreib ich stundenlang Mails, die keiner liest.",
    "Kannst du dir vorstellen, wie müde ich bin?",
    "Leider hat mich niemand an den Geburtstag meiner Freundin erinnert.",
    "Mein Handy erinnert mich jeden Morgen um sieben ans Wassertrinken, und ich ignoriere es.",
    "Früher habe ich jeden Sonntag eine Einkaufsliste geschrieben, heute kaufe ich irgendwas.",
    "Wir haben in der Besprechung die Hälfte der Punkte von der Liste genommen.",
    "Der Kollege löscht ständig meine Erinnerungen im gemeinsamen Kalender.",
    "Nimm's mir nicht übel, aber heute bin ich einfach nicht gut drauf.",
    "Ich habe heute keine Lust, irgendwas zu notieren oder mir zu merken.",
    "Die Liste der Dinge, die ich mir merken soll, wird jeden Tag länger.",
    "Bei der Arbeit mussten wir das Meeting auf zehn Uhr verlegen, weil der Raum belegt war.",
    "Als ich nach Hause kam, lag die Einkaufsliste noch auf dem Tisch, Milch und Eier oben.",
    "Meine Schwester hat geschrieben, ich solle sie morgen um acht an die Tabletten erinnern.",
    "Vielleicht sollte ich mir eine neue Liste anlegen, nur für schöne Dinge.",
    "Und die Erinnerung an den Zahnarzt habe ich einfach weggeklickt.",
    "Auf meiner To-do-Liste stehen noch drei Sachen, die ich morgen früh erledigen will.",
    "Meine Therapeutin meint, ich solle aufschreiben, was mich belastet.",
    "Ich mache mir ständig Notizen und finde sie dann nicht wieder.",
    "Er rief mir noch nach: „Streich die Eier, wir haben genug!“",
    "Die Schrauben aus dem Baumarkt liegen immer noch im Flur.",
    "Ich hätte den Zahnarzt fast vergessen, wenn mein Kalender nicht gepiept hätte.",
    "Wie soll ich mir das alles merken, frage ich mich manchmal.",
    "Heute Abend will ich einfach nur schreiben, ohne dass daraus eine Aufgabe wird.",
    # somebody else's words without quotation marks
    "Mein Chef sagte: setz das alles auf die Einkaufsliste.",
    "Sie hat mir gesagt, streich die Eier, die sind alt.",
    "Setz Brot auf die Einkaufsliste, hat mein Mann gesagt, und ist gegangen.",
    "Verschieb den Zahnarzt auf Freitag, sagte sie zur Sprechstundenhilfe.",
    "Erinnere mich morgen um 9 an den Müll, schrieb mein Nachbar auf einen Zettel.",
    "Streich die Eier, dachte ich, dann ist wenigstens etwas erledigt.",
]
PASSING_EN = [
    "Yesterday I crossed the eggs off the shopping list because we still had some.",
    "My manager told me to put everything on the list that is still open.",
    "I'm writing to you because I have nobody else to talk to.",
    "Do you remember how I thought last week that it would get better?",
    "The reminder about the dentist tomorrow at nine already gives me a stomach ache.",
    "My brother moved the dentist appointment to Friday without asking me.",
    "There is a long list of tasks at the office that nobody wants to cross off.",
    "I noted down that I need milk and bread, and then I forgot it all anyway.",
    "Mum always says: \"Write it down, or you'll forget it.\"",
    "Then I sit on the sofa and stare at the wall.",
    "And then I write emails for hours that nobody reads.",
    "Can you imagine how tired I am?",
    "Sadly nobody reminded me of my friend's birthday.",
    "My phone reminds me every morning at seven to drink water, and I ignore it.",
    "I used to write a shopping list every Sunday; now I just buy anything.",
    "In the meeting we took half the points off the list.",
    "My colleague keeps deleting my reminders in the shared calendar.",
    "Don't take it personally, but today I'm just not in a good mood.",
    "I have no energy today to note anything down or to remember anything.",
    "The list of things I am supposed to remember gets longer every day.",
    "At work we had to move the meeting to ten because the room was taken.",
    "When I came home, the shopping list was still on the table, milk and eggs at the top.",
    "My sister texted me that I should remind her about her pills tomorrow at eight.",
    "Maybe I should start a new list, just for nice things.",
    "And the dentist reminder, I simply clicked it away.",
    "There are still three things on my to-do list that I want to get done tomorrow.",
    "My therapist says I should write down what weighs on me.",
    "I make notes all the time and then never find them again.",
    "He shouted after me: \"Cross off the eggs, we have plenty!\"",
    "Take care of yourself, my grandmother always wrote at the end of her letters.",
    "Remember when we laughed until we cried? I miss that.",
    "I nearly forgot the dentist, but my calendar beeped.",
    "Tonight I just want to write without it turning into a task.",
    # somebody else's words without quotation marks
    "My boss said: put it all on the shopping list.",
    "She told me, cross off the eggs, they are old.",
    "Put bread on the shopping list, my husband said, and left.",
    "Move the dentist to Friday, my wife told the receptionist, but they had no slot.",
    "Remind me tomorrow at 9 about the bins, my neighbour wrote on a note.",
    "Cross off the eggs, cross off the milk, and the list is empty again, I thought.",
]
JOINTS = [" ", " ", " ", "\n\n", "\n"]

# One real command per agent, set into a narrative: it is found, and only it.
COMMANDS_IN = [
    ("Setz bitte Hafermilch auf die Einkaufsliste.", "lists"),
    ("Streich die Schrauben.", "lists"),
    ("Erinnere mich morgen um 9 an die Steuer.", "reminders"),
    ("Verschieb den Zahnarzt auf 11 Uhr.", "reminders"),
    ("Put oat milk on the shopping list.", "lists"),
    ("Please remind me tomorrow at 5 pm to water the plants.", "reminders"),
]


def narrative(sentences: list[str], joints: list[str]) -> str:
    """The sentences in order, joined, until the text reaches `LENGTH` (cycling if it must)."""
    text, index = "", 0
    while len(text.strip()) < LENGTH:
        text += sentences[index % len(sentences)] + joints[index % len(joints)]
        index += 1
    return text.strip()


@st.composite
def narratives(draw: st.DrawFn, language: str | None = None) -> str:
    pool = {"de": PASSING_DE, "en": PASSING_EN}[language or draw(st.sampled_from(["de",
                                                                                 "en"]))]
    order = draw(st.permutations(pool))
    joints = draw(st.lists(st.sampled_from(JOINTS), min_size=1, max_size=8))
    return narrative(list(order), joints)


@pytest.mark.parametrize("sentence", PASSING_DE + PASSING_EN)
def test_each_passing_sentence_asks_for_nothing(sentence):
    assert agents_for(sentence, KNOWN) == [], sentence


@settings(max_examples=120, deadline=None)
@given(text=narratives())
def test_a_long_narrative_with_the_trigger_words_in_passing_asks_for_nothing(text):
    assert len(text) >= LENGTH
    assert agents_for(text, KNOWN) == [] and split_tasks(text, KNOWN) == [], text


@settings(max_examples=80, deadline=None)
@given(language=st.sampled_from(["de", "en"]), data=st.data(),
       command=st.sampled_from(COMMANDS_IN))
def test_a_command_set_into_a_long_narrative_is_found_and_nothing_else(language, data,
                                                                       command):
    text, agent = command
    sentences = data.draw(st.permutations({"de": PASSING_DE, "en": PASSING_EN}[language]))
    at = data.draw(st.integers(0, len(sentences)))
    story = list(sentences[:at]) + [text] + list(sentences[at:])
    [(found, task)] = split_tasks(" ".join(story), KNOWN)
    assert found == agent and text.rstrip(".").split()[-1] in task, task


@pytest.mark.parametrize("text, agents", [
    # A frame that speaks to the character keeps the command addressed to it.
    ("Ich hab dir doch gesagt: setz Milch auf die Einkaufsliste!", ["lists"]),
    ("I told you: put milk on the shopping list.", ["lists"]),
    # A reason after the command is no frame.
    ("Setz Milch auf die Einkaufsliste, mein Mann sagt, wir haben keine mehr.", ["lists"]),
    ("Put milk on the shopping list, my wife says we are out of it.", ["lists"]),
    ("Erinnere mich morgen um 9 an den Zahnarzt, ich vergesse das sonst.", ["reminders"]),
    ("Remind me tomorrow at 9 about the dentist, I always forget it.", ["reminders"]),
    ("Streich die Eier, hab ich schon gekauft.", ["lists"]),
    # Reported after the command, or before it.
    ("Put milk on the shopping list, my wife says.", []),
    ("Streich die Eier, dachte ich.", []),
    ("Mum always says: remind me tomorrow at 9 about the dentist.", []),
    ("Er meinte nur, erinner mich morgen um 9 an den Zahnarzt.", []),
    # German's frame, verb first, typed without its comma.
    ("Streich die Eier dachte ich.", []),
    ("Setz Brot auf die Einkaufsliste hat mein Mann gesagt und ist gegangen.", []),
    ("Erinnere mich morgen um 9 an den Müll schrieb mein Nachbar auf einen Zettel.", []),
])
def test_reported_words_are_no_command_and_words_to_the_character_are(text, agents):
    assert agents_for(text, KNOWN) == agents, text


# --- the whole app, offline model: a table of composed narratives -------------------------

def composed(language: str, seed: int) -> str:
    pool = list({"de": PASSING_DE, "en": PASSING_EN}[language])
    random.Random(seed).shuffle(pool)
    return narrative(pool, JOINTS[seed % len(JOINTS):] or [" "])


TABLE = [composed(language, seed) for language in ("de", "en") for seed in (1, 2, 3)]


@pytest.fixture
def offline_app(make_settings):
    return create_app(make_settings(llm_provider="offline"), local_token=TOKEN)


@pytest.mark.parametrize("text", TABLE, ids=[f"{lang}-{seed}" for lang in ("de", "en")
                                             for seed in (1, 2, 3)])
async def test_a_composed_narrative_changes_nothing_and_recites_no_list(offline_app,
                                                                        aiohttp_client, text):
    chat = await open_chat(aiohttp_client, offline_app)
    redis = chat.app[REDIS]
    await ListStore(redis, "local", "nova").apply("Einkaufsliste", add=["Milch", "Eier"])
    dentist = await ReminderStore(redis).add("local", "nova", "Zahnarzt", 4102444800.0)
    answer = await chat.response(await chat.send(text))
    await chat.settle()
    for recital in ("Einkaufsliste", "shopping list", "Milch", "steht", "Zahnarzt",
                    "Erinnerung", "reminder"):
        assert recital not in answer["text"], (recital, answer["text"])
    stages = chat.stages(answer["turn_id"])
    assert "lists" not in stages and "reminders" not in stages, stages
    [kept] = await chat.get("/api/characters/nova/lists")
    assert kept["items"] == ["Milch", "Eier"]
    [reminder] = await chat.get("/api/characters/nova/reminders")
    assert (reminder["id"], reminder["text"], reminder["due_at"], reminder["status"]) == (
        dentist.id, "Zahnarzt", 4102444800.0, "pending")
    user_turn = [t for t in await chat.session() if t["rolle"] == "user"][-1]
    assert not user_turn["aktion_erledigt"]
