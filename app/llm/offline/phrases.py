"""What the offline model says: its conversational phrases, per language.

These are the offline model's content, like its lexicon (`lexicon.py`), not server texts
(`app.core.i18n`): they stand in for what a real model would write, and a real model writes its
own words instead. Kept with the model so that the offline model can be read, changed and
replaced whole; the server's own sentences (the agents' reports, the impulse thoughts) are
said whichever model runs, and live in `app.core.i18n`.

- `REFLECT`: the opening that mirrors the user's emotion (by the lexicon's German label);
- `PHRASES`: follow-up questions, greeting, goodbye, the crisis answer and the rest of the
  reflective reply (`handlers.reflective_reply`);
- `YOU`: how the summary names the user ("Du"/"You" instead of the renderer's `USER`).
"""

from __future__ import annotations

REFLECT = {
    "de": {
        "trauer": "Das klingt traurig.", "wut": "Das hat dich richtig geärgert, oder?",
        "angst": "Das klingt, als würde dich das beunruhigen.",
        "stress": "Das klingt nach ganz schön viel Druck.",
        "erschoepfung": "Das klingt erschöpfend.", "ekel": "Igitt, das klingt unangenehm.",
        "freude": "Das klingt schön!", "begeisterung": "Wie toll!",
        "liebe": "Das ist lieb von dir.", "dankbarkeit": "Gern geschehen.",
        "ueberraschung": "Das kam unerwartet, oder?",
    },
    "en": {
        "trauer": "That sounds sad.", "wut": "That really annoyed you, didn't it?",
        "angst": "That sounds like it worries you.",
        "stress": "That sounds like a lot of pressure.",
        "erschoepfung": "That sounds exhausting.", "ekel": "Ugh, that sounds unpleasant.",
        "freude": "That sounds lovely!", "begeisterung": "How wonderful!",
        "liebe": "That's sweet of you.", "dankbarkeit": "You're welcome.",
        "ueberraschung": "That was unexpected, wasn't it?",
    },
}
PHRASES = {
    "de": {"ask_topic": "Was bedeutet {0} für dich?",
           "ask": ("Magst du mir mehr darüber erzählen?",
                   "Erzähl ruhig weiter – was beschäftigt dich daran am meisten?",
                   "Wie ging es dir damit?",
                   "Und was hast du jetzt vor?"),
           "question": ("Gute Frage – was denkst du selbst darüber?",
                        "Da bin ich mir nicht sicher. Wie siehst du es?",
                        "Hm, schwer zu sagen. Was spricht für dich dafür, was dagegen?"),
           "greet": "Hallo! Schön, dass du da bist. Wie geht es dir gerade?",
           "how": "Mir geht es gut, danke der Nachfrage! Und wie geht es dir?",
           "bye": "Bis bald! Pass auf dich auf.",
           "crisis": "Ich höre dich, und ich nehme das ernst. Bitte sprich mit jemandem, "
                     "der jetzt für dich da sein kann – in Deutschland erreichst du die "
                     "Telefonseelsorge rund um die Uhr unter 0800 111 0 111.",
           "empty": "Ich bin da. Was möchtest du erzählen?"},
    "en": {"ask_topic": "What does {0} mean to you?",
           "ask": ("Would you like to tell me more about it?",
                   "Go on – what about it is on your mind most?",
                   "How did that feel?",
                   "And what are you going to do now?"),
           "question": ("Good question – what do you think yourself?",
                        "I'm not sure about that. How do you see it?",
                        "Hm, hard to say. What speaks for it, what against?"),
           "greet": "Hello! Good to have you here. How are you right now?",
           "how": "I'm doing well, thanks for asking! And how are you?",
           "bye": "See you soon! Take care.",
           "crisis": "I hear you, and I take this seriously. Please reach out to someone "
                     "who can be there for you right now, such as a local crisis line or "
                     "emergency services.",
           "empty": "I'm here. What would you like to talk about?"},
}
YOU = {"de": "Du", "en": "You"}
