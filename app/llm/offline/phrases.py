"""What the offline model says: its conversational phrases, per language.

These are the offline model's content, like its lexicon (`lexicon.py`), not server texts
(`app.core.i18n`): they stand in for what a real model would write, and a real model writes its
own words instead. Kept with the model so that the offline model can be read, changed and
replaced whole; the server's own sentences (the agents' reports, the impulse thoughts) are
said whichever model runs, and live in `app.core.i18n`.

- `REFLECT`: the opening that mirrors the user's emotion (by the lexicon's German label);
- `PHRASES`: follow-up questions (`ask` after news, `heavy` after bad news — never a to-do
  question there —, `question` after a question), acknowledgements that open a reply to a
  plain statement, greeting, goodbye, the crisis answer, what the offline model can do
  (`abilities`: the honest answer to "Was kannst du?") and the rest of the reflective reply
  (`handlers.reflective_reply`);
- `YOU`: how the summary names the user ("Du"/"You" instead of the renderer's `USER`).
"""

from __future__ import annotations

from typing import TypedDict


class Phrases(TypedDict):
    """One language's phrases: single sentences, and the variants a reply rotates through."""

    ask_topic: str
    ask: tuple[str, ...]
    heavy: tuple[str, ...]
    acknowledge: tuple[str, ...]
    question: tuple[str, ...]
    greet: tuple[str, ...]
    how: tuple[str, ...]
    bye: str
    crisis: str
    empty: str
    abilities: tuple[str, ...]


REFLECT = {
    "de": {
        "trauer": "Das klingt traurig.",
        "wut": "Das hat dich richtig geärgert, oder?",
        "angst": "Das klingt, als würde dich das beunruhigen.",
        "stress": "Das klingt nach ganz schön viel Druck.",
        "erschoepfung": "Das klingt erschöpfend.",
        "ekel": "Igitt, das klingt unangenehm.",
        "freude": "Das klingt schön!",
        "begeisterung": "Wie toll!",
        "liebe": "Das ist lieb von dir.",
        "dankbarkeit": "Gern geschehen.",
        "ueberraschung": "Das kam unerwartet, oder?",
    },
    "en": {
        "trauer": "That sounds sad.",
        "wut": "That really annoyed you, didn't it?",
        "angst": "That sounds like it worries you.",
        "stress": "That sounds like a lot of pressure.",
        "erschoepfung": "That sounds exhausting.",
        "ekel": "Ugh, that sounds unpleasant.",
        "freude": "That sounds lovely!",
        "begeisterung": "How wonderful!",
        "liebe": "That's sweet of you.",
        "dankbarkeit": "You're welcome.",
        "ueberraschung": "That was unexpected, wasn't it?",
    },
}
PHRASES: dict[str, Phrases] = {
    "de": {
        "ask_topic": "Was bedeutet {0} für dich?",
        "ask": (
            "Magst du mir mehr darüber erzählen?",
            "Erzähl ruhig weiter – was beschäftigt dich daran am meisten?",
            "Wie ging es dir damit?",
            "Und was hast du jetzt vor?",
            "Wie kam es dazu?",
            "Was davon ist dir am wichtigsten?",
            "Was hat dich daran überrascht?",
            "Wie siehst du das inzwischen?",
        ),
        "heavy": (
            "Magst du mir mehr darüber erzählen?",
            "Ich bin da und höre zu. Was ist passiert?",
            "Was beschäftigt dich daran am meisten?",
            "Wie geht es dir gerade damit?",
            "Was würde dir jetzt guttun?",
            "Das ist viel auf einmal. Erzähl ruhig weiter, ich höre zu.",
            "Du musst das nicht allein tragen. Was liegt dir am schwersten auf dem Herzen?",
            "Danke, dass du mir das erzählst. Wie fühlst du dich jetzt?",
        ),
        "acknowledge": ("Verstehe.", "Okay.", "Hm, verstehe.", "Ah.", "Danke fürs Erzählen."),
        "question": (
            "Gute Frage – was denkst du selbst darüber?",
            "Da bin ich mir nicht sicher. Wie siehst du es?",
            "Hm, schwer zu sagen. Was spricht für dich dafür, was dagegen?",
        ),
        "greet": (
            "Hallo! Schön, dass du da bist. Wie geht es dir gerade?",
            "Hallo noch mal! Was gibt es Neues bei dir?",
            "Schön, von dir zu hören! Was liegt an?",
        ),
        "how": (
            "Mir geht es gut, danke der Nachfrage! Und wie geht es dir?",
            "Immer noch gut, danke! Und bei dir – wie läuft dein Tag?",
            "Gut, danke! Erzähl du lieber: Wie geht es dir?",
        ),
        "bye": "Bis bald! Pass auf dich auf.",
        "crisis": "Ich höre dich, und ich nehme das ernst. Bitte sprich mit jemandem, "
        "der jetzt für dich da sein kann – in Deutschland erreichst du die "
        "Telefonseelsorge rund um die Uhr unter 0800 111 0 111.",
        "empty": "Ich bin da. Was möchtest du erzählen?",
        "abilities": (
            "Gerade läuft kein Sprachmodell: Ich antworte nach einfachen Regeln "
            "und kann kein echtes Gespräch führen. Was trotzdem geht: Listen "
            "(„Setz Milch auf die Einkaufsliste“, „Streich die Eier“), "
            "Erinnerungen („Erinnere mich morgen um 9 an den Zahnarzt“) und das "
            "Tagebuch (oben unter „Tagebuch“ wird aus einem Tag ein Eintrag). Ein "
            "Sprachmodell (Ollama, llama.cpp, …) wählst du in den Einstellungen.",
            "Noch einmal kurz: Ohne Sprachmodell führe ich Listen, erinnere dich "
            "an Termine und mache unter „Tagebuch“ aus einem Tag einen Eintrag. "
            "Für echte Gespräche wähle in den Einstellungen ein Sprachmodell.",
        ),
    },
    "en": {
        "ask_topic": "What does {0} mean to you?",
        "ask": (
            "Would you like to tell me more about it?",
            "Go on – what about it is on your mind most?",
            "How did that feel?",
            "And what are you going to do now?",
            "How did that come about?",
            "What matters most to you about it?",
            "What surprised you about it?",
            "How do you see it now?",
        ),
        "heavy": (
            "Would you like to tell me more about it?",
            "I'm here and listening. What happened?",
            "What about it weighs on you most?",
            "How are you holding up right now?",
            "What would do you good right now?",
            "That's a lot at once. Go on, I'm listening.",
            "You don't have to carry this alone. What is hardest for you?",
            "Thank you for telling me. How do you feel now?",
        ),
        "acknowledge": ("I see.", "Okay.", "Hm, I see.", "Ah.", "Thanks for telling me."),
        "question": (
            "Good question – what do you think yourself?",
            "I'm not sure about that. How do you see it?",
            "Hm, hard to say. What speaks for it, what against?",
        ),
        "greet": (
            "Hello! Good to have you here. How are you right now?",
            "Hello again! What's new with you?",
            "Good to hear from you! What's up?",
        ),
        "how": (
            "I'm doing well, thanks for asking! And how are you?",
            "Still well, thanks! And you – how is your day going?",
            "Fine, thanks! But tell me: how are you?",
        ),
        "bye": "See you soon! Take care.",
        "crisis": "I hear you, and I take this seriously. Please reach out to someone "
        "who can be there for you right now, such as a local crisis line or "
        "emergency services.",
        "empty": "I'm here. What would you like to talk about?",
        "abilities": (
            "No language model is running right now: I answer by simple rules "
            "and can't hold a real conversation. What works all the same: lists "
            "(“Put milk on the shopping list”, “Cross off the eggs”), reminders "
            "(“Remind me tomorrow at 9 about the dentist”) and the journal (under "
            "“Journal” at the top a day becomes an entry). You pick a language "
            "model (Ollama, llama.cpp, …) in the settings.",
            "Once more, in short: without a language model I keep lists, remind "
            "you of things and turn a day into an entry under “Journal”. For real "
            "conversations, pick a language model in the settings.",
        ),
    },
}
YOU = {"de": "Du", "en": "You"}
