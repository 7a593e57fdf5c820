"""The server's own texts in German and English: one table, and the one reading of a language.

Server texts are what the server itself says in the user's or the character's language: the
sentences the lists and reminders agents report ("Milch steht jetzt auf der Liste „Einkauf“."),
the thoughts a due reminder or a quiet pair becomes, the interaction profile's product
defaults, heading and label (shown in the UI and put into the responder's prompt), the words
the journal writes into a draft and an export, and the names of weekdays and months (a long
date, `long_date`; a date inside a sentence, `sentence_date`). Every language has the same
groups, keys and `{placeholders}` (tests/core/test_i18n.py).

Not here, each for a reason:
- the UI's own texts and the reasons of the API's error codes: `web/js/i18n.js`, in the browser;
- the prompts (`app.pipeline.prompts` blocks and the template files): instructions to the
  model, kept with the purposes and templates they belong to, and never shown to the user;
- the history renderer's speaker labels (`app.memory.render`): the format of the model's
  input, which the tribunal and the offline model read back;
- the offline model's conversational phrases (`app.llm.offline.phrases`, the router and
  responder rules in `app.pipeline.offline`): what a stand-in model says is the model's
  content, like its lexicon; a real model says its own words instead, and the offline model
  is kept whole in one place so that it can be replaced whole.

`language_of` is the one normalisation of a language tag: `de`, `de-AT`, `de_CH`, `DE` → `de`;
a language the server has no texts for → English.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

LANGUAGES = ("de", "en")
FALLBACK_LANGUAGE = "en"

WEEKDAYS = {
    "de": ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"),
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
}
MONTHS = {
    "de": (
        "Januar",
        "Februar",
        "März",
        "April",
        "Mai",
        "Juni",
        "Juli",
        "August",
        "September",
        "Oktober",
        "November",
        "Dezember",
    ),
    "en": (
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ),
}


def language_of(tag: str) -> str:
    """`de`/`en` for any `de-AT`, `en_GB`, …; English for a language without texts."""
    code = tag.replace("_", "-").split("-", 1)[0].lower()
    return code if code in LANGUAGES else FALLBACK_LANGUAGE


def texts(group: str, language: str) -> Mapping[str, str]:
    """One group of texts (`lists`, `reminders`, …) in `language` (any tag)."""
    return TEXTS[language_of(language)][group]


def long_date(date: dt.date, language: str) -> str:
    """A calendar date as a person writes it: "Dienstag, 1. Dezember 2026" / "Tuesday,
    December 1, 2026" (what the page's `Intl` long date says in that language)."""
    code = language_of(language)
    return texts("dates", code)["long"].format(
        weekday=WEEKDAYS[code][date.weekday()],
        day=date.day,
        month=MONTHS[code][date.month - 1],
        year=date.year,
    )


# How a date stands in a sentence ("am 02.12.2026", "on December 2, 2026"): each language's
# own form with its own fields, so no TEXTS entry (those have the same placeholders in every
# language); `{month}` is the month's name.
SENTENCE_DATES = {
    "de": "{date:%d.%m.%Y}",
    "en": "{month} {date.day}, {date.year}",
}


def sentence_date(date: dt.date, language: str) -> str:
    """A calendar date inside a sentence: "02.12.2026" / "December 2, 2026"."""
    code = language_of(language)
    return SENTENCE_DATES[code].format(date=date, month=MONTHS[code][date.month - 1])


TEXTS: dict[str, dict[str, dict[str, str]]] = {
    "de": {
        "lists": {
            "added": "{items} steht jetzt auf der Liste „{name}“.",
            "added_many": "{items} stehen jetzt auf der Liste „{name}“.",
            "already": "{items} stand schon auf der Liste „{name}“.",
            "already_many": "{items} standen schon auf der Liste „{name}“.",
            "removed": "{items} ist von der Liste „{name}“ gestrichen.",
            "removed_many": "{items} sind von der Liste „{name}“ gestrichen.",
            "missing": "{items} stand nicht auf der Liste „{name}“.",
            "missing_many": "{items} standen nicht auf der Liste „{name}“.",
            "missing_anywhere": "{items} steht auf keiner Liste.",
            "missing_anywhere_many": "{items} stehen auf keiner Liste.",
            "cleared": "Die Liste „{name}“ ist jetzt leer.",
            "created": "Die Liste „{name}“ ist neu angelegt.",
            "shows": "Auf der Liste „{name}“ steht: {items}.",
            "empty": "Die Liste „{name}“ ist leer.",
            "no_lists": "Es gibt noch keine Listen.",
            "not_found": "Eine Liste „{name}“ gibt es nicht.",
            "which_item": "Was meinst du mit „{word}“? Sag mir, welchen Eintrag ich streichen "
            "soll – ich habe nichts geändert.",
            "which": "Auf welche Liste: {names}?",
            "which_new": "Eine Liste „{name}“ gibt es noch nicht. Soll ich sie neu anlegen, oder "
            "meinst du {names}?",
            "name_it": "Wie soll die Liste heißen?",
            "and": "und",
            "or": "oder",
            "quote": "„{name}“",
            "none": "(leer)",
        },
        "agents": {
            # what the responder is told when an agent broke down (so it never claims success)
            "failed": "Das hat nicht geklappt: Beim Ausführen ist ein Fehler passiert.",
        },
        "reminders": {
            "set": "Ich erinnere dich {when} an „{text}“.",
            "when": "am {day} um {date:%H:%M} Uhr",
            "list": "Offene Erinnerungen: {items}.",
            "item": "„{text}“ {when}",
            "none": "Es gibt keine offenen Erinnerungen.",
            "ask_when": "Wann soll ich dich an „{text}“ erinnern?",
            "ask_what": "Woran soll ich dich erinnern?",
            "past": "{when} ist schon vorbei. Wann soll ich dich an „{text}“ erinnern?",
            "too_many": "Ich habe schon {count} offene Erinnerungen für dich – mehr merke ich "
            "mir nicht. Soll ich eine davon löschen?",
            "deleted": "Die Erinnerung an „{text}“ ist gelöscht.",
            "moved": "Ich habe „{text}“ verschoben: Ich erinnere dich {when} daran.",
            "ask_move": "Auf wann soll ich „{text}“ verschieben?",
            "not_found": "Eine Erinnerung an „{text}“ habe ich nicht gefunden.",
            "which": "Welche Erinnerung meinst du: {options}?",
            "still_unclear": "Ich weiß noch nicht, welche Erinnerung du meinst – sag mir ihren "
            "Text oder ihre Zeit.",
            "or": "oder",
        },
        "impulses": {
            "reminder_due": "Ich wollte dich an „{text}“ erinnern – es ist so weit.",
            "reflection": "Mir geht unser letztes Gespräch noch durch den Kopf.",
        },
        "reflect_on": {
            "plan": "Du hattest mir erzählt: „{text}“ – ich frage mich, wie es gelaufen ist.",
            "feeling": "Du hattest mir erzählt: „{text}“ – ich frage mich, wie es dir jetzt "
            "damit geht.",
        },
        "interaction": {
            "heading": "Wie dieser Mensch angesprochen werden möchte:",
            "label": "Voreinstellung",
        },
        "journal": {
            "title": "Tagebuch",
            "done": "Erledigt",
        },
        "diary_import": {
            "photo_not_imported": "{count} Foto nicht übernommen",
            "photos_not_imported": "{count} Fotos nicht übernommen",
            "day_has_entry": "Nicht übernommen, weil der Tag schon einen Eintrag hat: {days}",
        },
        "dates": {
            "long": "{weekday}, {day}. {month} {year}",
        },
        "interaction_defaults": {
            "answer_length": "Antworte kurz: zwei bis vier Sätze, außer der Mensch möchte mehr.",
            "follow_up": "Höchstens eine Anschlussfrage oder ein Impuls pro Antwort.",
            "listening": "Während der Mensch erzählt, hör zu: kurz spiegeln, keine Ratschläge, "
            "kein Themenwechsel.",
        },
    },
    "en": {
        "lists": {
            "added": "{items} is now on the list “{name}”.",
            "added_many": "{items} are now on the list “{name}”.",
            "already": "{items} was already on the list “{name}”.",
            "already_many": "{items} were already on the list “{name}”.",
            "removed": "{items} is crossed off the list “{name}”.",
            "removed_many": "{items} are crossed off the list “{name}”.",
            "missing": "{items} was not on the list “{name}”.",
            "missing_many": "{items} were not on the list “{name}”.",
            "missing_anywhere": "{items} is on none of the lists.",
            "missing_anywhere_many": "{items} are on none of the lists.",
            "cleared": "The list “{name}” is empty now.",
            "created": "The list “{name}” is new.",
            "shows": "The list “{name}” has: {items}.",
            "empty": "The list “{name}” is empty.",
            "no_lists": "There are no lists yet.",
            "not_found": "There is no list “{name}”.",
            "which_item": "What do you mean by “{word}”? Tell me which entry to cross off – "
            "I haven't changed anything.",
            "which": "Which list: {names}?",
            "which_new": "There is no list “{name}” yet. Shall I start it as a new list, or do "
            "you mean {names}?",
            "name_it": "What should the list be called?",
            "and": "and",
            "or": "or",
            "quote": "“{name}”",
            "none": "(empty)",
        },
        "agents": {
            "failed": "That did not work: something went wrong while doing it.",
        },
        "reminders": {
            "set": "I'll remind you of “{text}” {when}.",
            "when": "on {day} at {date:%H:%M}",
            "list": "Open reminders: {items}.",
            "item": "“{text}” {when}",
            "none": "There are no open reminders.",
            "ask_when": "When shall I remind you of “{text}”?",
            "ask_what": "What shall I remind you of?",
            "past": "{when} has passed already. When shall I remind you of “{text}”?",
            "too_many": "You have {count} open reminders already; I can't keep more. Shall I "
            "drop one of them?",
            "deleted": "The reminder of “{text}” is deleted.",
            "moved": "I moved “{text}”: I'll remind you of it {when}.",
            "ask_move": "When shall I move “{text}” to?",
            "not_found": "I found no reminder of “{text}”.",
            "which": "Which reminder do you mean: {options}?",
            "still_unclear": "I still don't know which reminder you mean – tell me its text "
            "or its time.",
            "or": "or",
        },
        "impulses": {
            "reminder_due": "I wanted to remind you of “{text}” – it is time.",
            "reflection": "Our last conversation is still on my mind.",
        },
        "reflect_on": {
            "plan": "You told me: “{text}” – I wonder how it went.",
            "feeling": "You told me: “{text}” – I wonder how you feel about it now.",
        },
        "interaction": {
            "heading": "How this person likes to be answered:",
            "label": "product default",
        },
        "journal": {
            "title": "Journal",
            "done": "Done",
        },
        "diary_import": {
            "photo_not_imported": "{count} photo not imported",
            "photos_not_imported": "{count} photos not imported",
            "day_has_entry": "Not imported because the day has an entry already: {days}",
        },
        "dates": {
            "long": "{weekday}, {month} {day}, {year}",
        },
        "interaction_defaults": {
            "answer_length": "Keep answers short: two to four sentences unless the person asks "
            "for more.",
            "follow_up": "At most one follow-up question or impulse per answer.",
            "listening": "While the person tells a story, listen: reflect briefly, give no "
            "advice and do not change the topic.",
        },
    },
}
