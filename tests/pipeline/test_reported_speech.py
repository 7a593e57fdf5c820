"""Issue 21, item 3, as a class: somebody else's words are no command, with or without their
punctuation, before or after the command ("Put bread on the list my husband said", "add milk
to the list she told me", "remind me to call mom, he keeps saying", "Setz Milch auf die Liste
hat meine Frau gesagt", "Mein Chef sagte setz …"). The reporting verb decides: the same
commands with a harmless clause after them ("…, please", "…the list my husband likes", "…the
cake she asked for", "…, den meine Frau mag") stay commands. Through the offline rules
(hypothesis: frames × commands) and through the whole app with the offline model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.pipeline.offline_rules.routing import Known, agents_for, split_tasks
from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.pipeline_support import open_chat

KNOWN = Known.of("- Einkaufsliste: Milch, Eier, Brot\n- shopping list: eggs, bread, milk",
                 "- Zahnarzt — 2026-12-01T09:00:00+01:00 (Dienstag)\n"
                 "- dentist — 2026-12-03T10:00:00+01:00 (Donnerstag)")

COMMANDS = {
    "en": [("Put bread on the list", "lists"), ("Add milk to the shopping list", "lists"),
           ("Put the cake on my list", "lists"), ("Cross off the eggs", "lists"),
           ("Remind me tomorrow at 9 about the cake", "reminders"),
           ("Remind me to call mom", "reminders"), ("Move the dentist to 11am", "reminders"),
           ("Please remind me at 5 pm to buy the wine", "reminders")],
    "de": [("Setz Milch auf die Liste", "lists"), ("Setz den Kuchen auf die Einkaufsliste",
                                                   "lists"),
           ("Streich die Eier", "lists"), ("Schreib Brot auf die Einkaufsliste", "lists"),
           ("Erinnere mich morgen um 9 an den Kuchen", "reminders"),
           ("Verschieb den Zahnarzt auf 11 Uhr", "reminders"),
           ("Erinnere mich daran, Mama anzurufen", "reminders")],
}
SUBJECTS = {"en": ["my husband", "she", "he", "my wife", "Tom", "my mum", "the doctor",
                   "our neighbour", "my little sister", "I"],
            "de": ["meine Frau", "mein Mann", "er", "sie", "mein Chef", "die Nachbarin"]}
# Verbs of saying after their subject, with whom it was said to.
VERBS_AFTER = {"en": ["said", "told me", "says", "keeps saying", "asked", "always says",
                      "told us again", "kept telling me", "said yesterday", "used to say",
                      "told the receptionist"],
               "de": ["hat gesagt", "hat mir gesagt", "sagte", "meinte", "hat das gesagt",
                      "sagt immer", "hatte gemeint"]}
TRAILS = ["", ".", "!", " and left.", ", and laughed."]
TRAILS_DE = ["", ".", "!", " und ist gegangen.", ", und hat gelacht."]


@st.composite
def reported(draw: st.DrawFn) -> str:
    """A command framed as somebody else's words, in one of the ways people type it."""
    language = draw(st.sampled_from(["en", "de"]))
    command, _ = draw(st.sampled_from(COMMANDS[language]))
    subject = draw(st.sampled_from(SUBJECTS[language]))
    verb = draw(st.sampled_from(VERBS_AFTER[language]))
    comma = draw(st.sampled_from(["", ","]))
    trail = draw(st.sampled_from(TRAILS if language == "en" else TRAILS_DE))
    lowered = command[:1].lower() + command[1:]
    if language == "en":
        forms = [f"{command}{comma} {subject} {verb}{trail}",              # after, subject first
                 f"{command}{comma} said {subject}{trail}",               # after, verb first
                 f"{subject[:1].upper()}{subject[1:]} {verb}{draw(st.sampled_from(['', ':', ',']))}"
                 f" {lowered}{trail}"]                                    # before it
    else:
        done, _, rest = verb.partition(" ")                              # "hat gesagt"
        verb_first = (f"{done} {subject} {rest}" if done in ("hat", "hatte") and rest
                      else f"{verb} {subject}")
        head = subject[:1].upper() + subject[1:]
        forms = [f"{command}{comma} {verb_first}{trail}",                 # after, verb first
                 f"{command}{comma} {subject} {verb}{trail}",             # after, subject first
                 f"{head} {verb}{draw(st.sampled_from(['', ':', ',']))} {lowered}{trail}"]
    return draw(st.sampled_from(forms))


@settings(max_examples=200, deadline=None)
@given(text=reported())
def test_a_command_in_somebody_elses_words_asks_for_nothing(text):
    assert agents_for(text, KNOWN) == [] and split_tasks(text, KNOWN) == [], text


# What may follow a command and leave it addressed to the character: politeness, a reason,
# a relative clause about its object — also one with a verb of saying in it ("the cake she
# asked for", "the list she told me about", "…, die meine Frau meinte"). A removal that names
# no list takes its items to the clause's end, so it gets no relative clause.
POLITE = {"en": [", please", " please", ", thanks", ", I always forget",
                 ", my wife says we are out of it"],
          "de": [", bitte", " bitte", ", danke", ", ich vergesse das sonst",
                 ", mein Mann sagt, wir haben keine mehr"]}
RELATIVE = {"en": [" — thank you", " my husband likes", " my wife wants", " she asked for",
                   " she told me about", " that my wife likes", " as soon as you can",
                   ", the one Tom asked for"],
            "de": [", den meine Frau mag", ", den mein Mann so mag", ", die meine Frau meinte",
                   " für meine Frau"]}
BARE_REMOVALS = {"Cross off the eggs", "Streich die Eier"}


@settings(max_examples=150, deadline=None)
@given(data=st.data(), language=st.sampled_from(["en", "de"]))
def test_a_command_with_a_harmless_clause_after_it_stays_a_command(data, language):
    command, agent = data.draw(st.sampled_from(COMMANDS[language]))
    trails = POLITE[language] + ([] if command in BARE_REMOVALS else RELATIVE[language])
    text = command + data.draw(st.sampled_from(trails)) + data.draw(
        st.sampled_from(["", ".", "!"]))
    assert agents_for(text, KNOWN) == [agent], text


@pytest.mark.parametrize("text, agents", [
    ("Put bread on the list my husband said", []),
    ("add milk to the list she told me", []),
    ("remind me to call mom, he keeps saying", []),
    ("Setz Milch auf die Liste hat meine Frau gesagt", []),
    ("Put bread on the list, please", ["lists"]),
    ("Put bread on the list my husband likes", ["lists"]),
    # a word opening a subordinate clause makes "…said" the command's own words
    ("Remind me tomorrow at 9 to ask Tom what the doctor said", ["reminders"]),
    # said to the character: still a command
    ("Put bread on the list I told you", ["lists"]),
])
def test_the_issues_examples(text, agents):
    assert agents_for(text, KNOWN) == agents, text


# --- the whole app, offline model ---------------------------------------------------------

@pytest.fixture
def offline_app(make_settings):
    return create_app(make_settings(llm_provider="offline"), local_token=TOKEN)


async def test_reported_words_change_nothing_and_a_command_does(offline_app, aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)
    for text in ("Put bread on the shopping list my husband said",
                 "Setz Milch auf die Einkaufsliste hat meine Frau gesagt",
                 "remind me tomorrow at 9 to call mom, he keeps saying"):
        answer = await chat.response(await chat.send(text))
        assert not {"lists", "reminders"} & set(chat.stages(answer["turn_id"])), text
    assert await chat.get("/api/characters/nova/lists") == []
    assert await chat.get("/api/characters/nova/reminders") == []
    await chat.response(await chat.send("Put bread on the shopping list my husband likes"))
    [kept] = await chat.get("/api/characters/nova/lists")
    assert kept["items"] == ["bread"]
