"""The macros of character cards (`{{char}}`, `{{user}}`, …), resolved where a text is used.

A definition keeps its texts as the card wrote them, so that exporting it gives the card back;
the macros are resolved when a text reaches the model (the persona, the lorebook) or the
screen (the greeting):

| macro | becomes |
|---|---|
| `{{char}}`, `<char>`, `<bot>` | the character's nickname (V3 `nickname`) or name |
| `{{user}}`, `<user>` | in the prompt: the word the product's prompts use for the user ("der Mensch", "the person"); on screen: "du" / "you" |
| `{{original}}` | nothing (V2: the app's own system prompt, which here always follows the persona anyway) |
| `{{// …}}`, `{{comment: …}}`, `{{hidden_key: …}}` | nothing (V3: never sent, never shown) |

Any other `{{…}}` stays as written. Novaberg knows no display name of the user: a login name
is not one, and putting it into every prompt would send it to a remote model unmasked.
Macros are matched case-insensitively (V3).
"""

from __future__ import annotations

import re

from app.core.i18n import language_of

PROMPT_USER = {"de": "der Mensch", "en": "the person"}
SHOWN_USER = {"de": "du", "en": "you"}

_CHAR = re.compile(r"\{\{char\}\}|<char>|<bot>", re.IGNORECASE)
_USER = re.compile(r"\{\{user\}\}|<user>", re.IGNORECASE)
_SILENT = re.compile(r"\{\{(?:original|//[^}]*|comment:[^}]*|hidden_key:[^}]*)\}\}", re.IGNORECASE)


def resolve(text: str, *, char: str, user: str) -> str:
    if "{" not in text and "<" not in text:
        return text
    text = _SILENT.sub("", text)
    text = _CHAR.sub(lambda _: char, text)
    return _USER.sub(lambda _: user, text)


def for_prompt(text: str, *, char: str, language: str) -> str:
    return resolve(text, char=char, user=PROMPT_USER[language_of(language)])


def for_screen(text: str, *, char: str, language: str) -> str:
    return resolve(text, char=char, user=SHOWN_USER[language_of(language)])
