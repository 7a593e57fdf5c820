"""Issue 21, item 3: a message is a command only where a clause is addressed to the character
as one — an imperative or a request at its start, its object named. A narrative that
mentions lists, writing, remembering or reminders in passing asks for nothing: no agent
runs, nothing is written, no list is recited. The offline rules one by one, over a space of
sentence frames (hypothesis), and the whole app with the offline model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.api.app_keys import REDIS
from app.memory.lists import ListStore
from app.pipeline.offline_rules.routing import Known, agents_for, only_commands, split_tasks
from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.pipeline_support import open_chat

KNOWN = Known.of("- Einkaufsliste: Milch, Eier, Brot\n- Baumarkt: Schrauben\n"
                 "- Shopping: eggs, bread",
                 "- Zahnarzt — 2026-12-01T09:00:00+01:00 (Dienstag)\n"
                 "- Call mum — 2026-12-02T15:00:00+01:00 (Mittwoch)")

NARRATIVE_DE = (
    "Heute war ein wirklich schwerer Tag, und ich muss dir einfach davon erzählen. Schon "
    "morgens um sieben stand ich im Büro, weil die offene Liste der Fehler aus dem letzten "
    "Release immer länger wurde. Mein Chef hat mir dann gesagt: „Schreib das alles auf die "
    "Liste und streich, was erledigt ist!“ – und genau das habe ich den ganzen Vormittag "
    "gemacht. Ich schreibe dir, weil ich sonst niemanden habe, mit dem ich darüber reden "
    "kann. Erinnerst du dich, wie ich letzte Woche noch dachte, es wird besser? Ich erinnere "
    "mich genau an das Gefühl. Die Erinnerung daran macht es heute fast schlimmer. Dann setz "
    "ich mich in der Mittagspause hin und notiere mir, was alles schiefging: die Termine, "
    "die verschoben wurden, die Erinnerungen im Kalender, die niemand gelesen hat, die "
    "Einkaufsliste, die seit Tagen auf dem Küchentisch liegt, weil ich nicht zum Einkaufen "
    "komme. Eier und Milch fehlen auch noch, aber das ist gerade egal. Am Nachmittag hat "
    "meine Kollegin die Besprechung auf morgen um zehn verschoben, und ich habe den Termin "
    "beim Zahnarzt gestrichen, weil ich einfach keine Kraft mehr hatte. Ich weiß nicht, ob "
    "du dir vorstellen kannst, wie es ist, wenn man die ganze Zeit das Gefühl hat, dass man "
    "nur noch Listen abarbeitet und nichts davon je fertig wird. Vielleicht sollte ich mir "
    "eine neue Liste machen, nur mit Dingen, die mir guttun. Aber selbst das fühlt sich "
    "gerade an wie noch eine Aufgabe mehr. Kannst du dir vorstellen, dass ich am Ende sogar "
    "vergessen habe, was ich eigentlich aufschreiben wollte? So war mein Tag. Ich bin müde, "
    "ich bin traurig, und ich wollte es einfach loswerden, bevor ich schlafen gehe. Morgen "
    "um neun geht es weiter, und die Liste ist immer noch da. Meine Mutter hat angerufen und "
    "gesagt, ich solle mir keine Sorgen machen und mir lieber merken, was gut lief. Ich "
    "habe ihr erzählt, dass ich eine Erinnerung im Handy hatte, die mich an das Abendessen "
    "erinnern sollte, und dass ich sie trotzdem verpasst habe. Sie meinte, ich solle mir "
    "das aufschreiben. Vielleicht hat sie recht, aber heute nicht mehr.")
NARRATIVE_EN = (
    "Today was a really hard day and I just need to tell you about it. I was at the office "
    "at seven because the open list of bugs from the last release kept growing. My boss "
    "told me: \"Put everything on the list and cross off what's done!\" and that is what I "
    "did all morning. I'm writing to you because there is nobody else I can talk to about "
    "it. Do you remember how I thought last week that it would get better? I remember that "
    "feeling exactly, and the memory makes today almost worse. At lunch I sat down and "
    "wrote down everything that went wrong: the meetings that were moved, the reminders in "
    "the calendar that nobody read, the shopping list that has been lying on the kitchen "
    "table for days because I never get to the shops. We are out of eggs and milk too, but "
    "that hardly matters now. In the afternoon my colleague moved the meeting to tomorrow "
    "at ten, and I cancelled the dentist appointment because I had no strength left. I "
    "don't know if you can imagine what it's like to feel that all you do is work through "
    "lists and none of it ever gets done. Maybe I should make a new list with only things "
    "that do me good. But even that feels like one more task right now. Can you believe I "
    "even forgot what I wanted to write down in the end? That was my day. I'm tired and sad "
    "and I wanted to get it off my chest before I go to sleep. On the bus home I kept "
    "thinking about the notes I wrote to myself months ago, the ones that said I would "
    "take better care of myself, and about the list of things I wanted to change this "
    "year. None of them happened. I don't want advice, I think. I just want someone to "
    "listen for a moment. Tomorrow at nine it starts "
    "again, and the list is still there. My mother called and told me not to worry and to "
    "remember what went well instead. I told her I had a reminder on my phone for dinner "
    "and missed it anyway. She said I should write that down. Maybe she is right, but not "
    "tonight.")


@pytest.mark.parametrize("text", [NARRATIVE_DE, NARRATIVE_EN])
def test_a_long_narrative_with_every_trigger_word_asks_for_nothing(text):
    assert len(text) > 1900, len(text)
    assert agents_for(text, KNOWN) == [] and split_tasks(text, KNOWN) == []


@pytest.mark.parametrize("text", [
    "Ich habe eine lange Liste an Sorgen.", "Ich erinnere mich gern an früher.",
    "Ich schreibe dir, weil die Liste der Fehler so lang ist.",
    "Gestern habe ich die Eier von der Liste gestrichen.",
    "Mein Chef sagte: „Setz das auf die Liste!“", "Dann setz ich mich hin und schreib weiter.",
    "Kannst du dir vorstellen, dass ich alles auf die Liste schreiben musste?",
    "Streich die Wand im Flur, hat meine Mutter gesagt.", "Erinnerungen sind etwas Schönes.",
    "Die Erinnerung an den Urlaub tut gut.", "Sie hat den Zahnarzt auf Freitag verschoben.",
    "Heute musste ich den Zahnarzt verschieben.", "Den Zahnarzt wollte ich nicht verschieben.",
    "Eier kann man nicht streichen.", "Morgen die Wand streichen.",
    "I have a long list of worries.", "I remember the old days.",
    "My boss moved the meeting to 10am.", "She said: \"remind me tomorrow\" and left.",
    "Reminders never work for me.", "I wrote it all down on a list yesterday.",
])
def test_sentences_that_mention_the_words_ask_for_nothing(text):
    assert agents_for(text, KNOWN) == [], text


@pytest.mark.parametrize("text, agents", [
    ("Setz Milch auf die Einkaufsliste", ["lists"]),
    ("Bitte schreib Brot und Butter auf die Einkaufsliste.", ["lists"]),
    ("Kannst du Käse auf die Einkaufsliste setzen?", ["lists"]),
    ("Setzt du bitte Käse auf die Liste?", ["lists"]),
    ("Streich die Eier", ["lists"]),
    ("Nimm die Eier runter", ["lists"]),
    ("Nova, streich bitte die Schrauben.", ["lists"]),
    ("Was steht auf der Einkaufsliste?", ["lists"]),
    ("Leere die Einkaufsliste", ["lists"]),
    ("Erinnere mich morgen um 9 an den Müll", ["reminders"]),
    ("Kannst du mich morgen an den Müll erinnern?", ["reminders"]),
    ("Lösch die Erinnerung an den Zahnarzt", ["reminders"]),
    ("Verschieb den Zahnarzt auf 10 Uhr", ["reminders"]),
    ("Welche Erinnerungen habe ich?", ["reminders"]),
    ("Put milk on the shopping list", ["lists"]),
    ("Could you add bread to my shopping list?", ["lists"]),
    ("Cross off the eggs", ["lists"]),
    ("Please remind me tomorrow at 3 pm to call mum", ["reminders"]),
    ("Delete the dentist reminder", ["reminders"]),
    ("Move the dentist to 10am", ["reminders"]),
    ("Move call mum to tomorrow", ["reminders"]),
    ("Könntest du den Zahnarzt auf 11 Uhr verschieben?", ["reminders"]),
    ("Kannst du bitte die Erinnerung an den Zahnarzt löschen?", ["reminders"]),
    ("Could you move the dentist to 11am?", ["reminders"]),
    # What it is about first, the infinitive last.
    ("Die Eier kannst du streichen.", ["lists"]),
    ("Bitte die Eier streichen.", ["lists"]),
    ("Eier streichen bitte", ["lists"]),
    ("Den Zahnarzt kannst du löschen.", ["reminders"]),
    ("Zahnarzt bitte auf 11 Uhr verschieben", ["reminders"]),
    ("Heute war viel los. Setz bitte Milch auf die Einkaufsliste und erinnere mich morgen "
     "an den Zahnarzt.", ["lists", "reminders"]),
])
def test_real_commands_are_commands(text, agents):
    assert agents_for(text, KNOWN) == agents, text


# --- the space of sentences (hypothesis) ------------------------------------------------------

TRIGGERS = ["die Liste", "die Einkaufsliste", "die Eier", "den Zahnarzt", "die Erinnerung",
            "mich erinnern", "schreiben", "streichen", "verschieben", "auf die Liste setzen",
            "morgen um 9", "the list", "the eggs", "the reminder", "the dentist", "remind me",
            "write it down", "cross off", "move it to 10am"]
NARRATIVE_FRAMES = [
    "Ich habe gestern {t} gesehen.", "Gestern musste ich {t} noch einmal ansehen.",
    "Meine Schwester meinte, dass {t} wichtig sei.", "Ich weiß nicht, ob {t} noch hilft.",
    "Es ging den ganzen Tag um {t}, weil ich müde war.", "Er sagte: „Nimm {t}!“",
    "Dann schreib ich {t} in mein Heft.", "Wir haben über {t} gesprochen.",
    "Yesterday I thought about {t} for hours.", "My friend said that {t} matters.",
    "I don't know whether {t} still helps.", "She told me: \"take {t}\" and left.",
    "We talked about {t} all evening.", "Then I put {t} away and cried.",
]
COMMANDS = [
    ("Setz {item} auf die Einkaufsliste", "lists"),
    ("Bitte setz {item} auf die Einkaufsliste.", "lists"),
    ("Kannst du {item} auf die Einkaufsliste schreiben?", "lists"),
    ("Streich {item} von der Einkaufsliste", "lists"),
    ("Put {item} on the shopping list", "lists"),
    ("Could you put {item} on my shopping list?", "lists"),
    ("Erinnere mich morgen an {item}", "reminders"),
    ("Kannst du mich morgen um 9 an {item} erinnern?", "reminders"),
    ("Remind me tomorrow about {item}", "reminders"),
]
ITEMS = st.sampled_from(["Milch", "Käse", "Hafermilch", "2 kg Mehl", "Äpfel", "Oma",
                         "den Müll", "die Steuer", "bread", "the oven"])
LEADS = st.sampled_from(["", "Okay. ", "Heute war ein langer Tag. ", "Hallo! ",
                         "I had a long day. ", "Danke dir! "])


@settings(max_examples=150, deadline=None)
@given(frame=st.sampled_from(NARRATIVE_FRAMES), trigger=st.sampled_from(TRIGGERS),
       lead=LEADS)
def test_trigger_words_in_narrative_frames_ask_for_nothing(frame, trigger, lead):
    text = lead + frame.format(t=trigger)
    assert agents_for(text, KNOWN) == [], text


@settings(max_examples=150, deadline=None)
@given(command=st.sampled_from(COMMANDS), item=ITEMS, lead=LEADS,
       tail=st.sampled_from(["", " Danke!", " Thanks.", " Das wär lieb."]))
def test_commands_in_varied_forms_are_the_action(command, item, lead, tail):
    frame, agent = command
    text = lead + frame.format(item=item) + tail
    assert agents_for(text, KNOWN) == [agent], text


# --- the whole app, offline model ---------------------------------------------------------

@pytest.fixture
def offline_app(make_settings):
    return create_app(make_settings(llm_provider="offline"), local_token=TOKEN)


@pytest.mark.parametrize("text", [NARRATIVE_DE, NARRATIVE_EN])
async def test_a_long_account_of_a_hard_day_gets_no_list_recital(offline_app, aiohttp_client,
                                                                 text):
    chat = await open_chat(aiohttp_client, offline_app)
    await ListStore(chat.app[REDIS], "local", "nova").apply("Einkaufsliste",
                                                            add=["Milch", "Eier"])
    sent = await chat.send(text)
    answer = await chat.response(sent)
    await chat.settle()
    assert "Einkaufsliste" not in answer["text"] and "shopping list" not in answer["text"]
    assert "Milch" not in answer["text"] and "steht" not in answer["text"]
    stages = chat.stages(answer["turn_id"])
    assert "lists" not in stages and "reminders" not in stages, stages
    assert await chat.get("/api/characters/nova/reminders") == []
    [kept] = await chat.get("/api/characters/nova/lists")
    assert kept["items"] == ["Milch", "Eier"]
    user_turn = [t for t in await chat.session() if t["rolle"] == "user"][-1]
    assert not user_turn["aktion_erledigt"]


@pytest.mark.parametrize("text, expected", [
    ("Setz Brot auf die Liste", True),
    ("Erinnere mich an die Wäsche", True),
    ("Bitte setz Milch auf die Liste.", True),
    ("Setz Milch auf die Einkaufsliste und erinnere mich morgen an den Zahnarzt.", True),
    ("Remind me tomorrow at 9 about the dentist", True),
    ("Put bread on the shopping list, please!", True),
    ("Heute war ich im Park und setz Milch auf die Liste", False),  # it tells something too
    ("Mein Chef sagte: setz das auf die Liste", False),  # somebody else's words
    ("Erzähl mir einen Witz", False),  # no agent keeps it
    ("Heute war ich im Park.", False),
])
def test_only_commands_is_a_line_of_nothing_but_commands_an_agent_keeps(text, expected):
    assert only_commands(text) is expected
