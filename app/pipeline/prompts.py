"""Prompts: one text template per model call and language, and the frame around the data.

A call is two messages, shaped for a server's prompt cache (what every call of a turn shares
first, what differs last; `PromptLibrary.messages`, issue 36):

- `system`: the character — `head.txt`, its persona; the same for every purpose.
- `user`: the frame — the data of this run as titled blocks (`### Verlauf`, …) built by
  `frame()`: first the session's summary and history (the same in every call of a turn), then
  the purpose's own blocks, then its instructions (`### Anweisung`), a template shipped as
  package data (`app/pipeline/prompts/{de,en}/<purpose>.txt`). A file
  `<data dir>/prompts/<lang>/<purpose>.txt` replaces the shipped one (read again when it
  changes). Placeholders are `str.format` fields (`{persona}`, `{character_name}`, …);
  `PURPOSES` names each template's fields and a test renders every template with them. The
  history block is the one renderer's text (design §3), never a list of role messages: the
  occasion of a line lives in its speaker line. Block titles are a per-language table
  (`BLOCKS`), like the renderer's speaker labels; the offline model reads the frame by them.

The language of a call is the character's language (`de` or `en`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from app.core.i18n import language_of
from app.core.prompt_templates import read_template
from app.core.settings import Settings
from app.llm.schema import fitted_max_tokens
from app.llm.types import BLOCK_PREFIX, Message
from app.pipeline import schemas

PACKAGE = "app.pipeline"


@dataclass(frozen=True, slots=True)
class Purpose:
    """One kind of model call: its template fields, answer schema and temperature. Its output
    reserve: a structured answer's is fitted to its schema (`app.llm.schema.fitted_max_tokens`,
    issue 36: every token the turn waits for costs as much as one of the reply); a text
    answer's is the setting `responder_max_tokens` (0 here)."""

    name: str
    fields: tuple[str, ...]
    schema: type[msgspec.Struct] | None
    temperature: float

    @property
    def max_tokens(self) -> int:
        return fitted_max_tokens(self.schema) if self.schema is not None else 0


PURPOSES: dict[str, Purpose] = {
    p.name: p
    for p in (
        Purpose("perception", ("character_name",), schemas.Perception, 0.2),
        Purpose("salience", ("character_name",), schemas.Salience, 0.2),
        Purpose("router", ("character_name",), schemas.Route, 0.0),
        Purpose("planner", ("character_name",), schemas.Plan, 0.0),
        Purpose("agent_lists", (), schemas.ListCommand, 0.0),
        Purpose("agent_reminders", (), schemas.ReminderCommand, 0.0),
        Purpose("responder", ("character_name", "interaction_hint"), None, 0.7),
        Purpose("thinker", ("character_name",), schemas.Verdict, 0.0),
        Purpose("corrector", ("character_name",), None, 0.3),
        Purpose("salience_character", ("character_name",), schemas.CharacterSalience, 0.2),
        Purpose("consolidation", ("character_name",), schemas.Consolidation, 0.0),
    )
}


@dataclass(frozen=True, slots=True)
class Blocks:
    """Titles of the frame's blocks in one language."""

    summary: str
    memory: str
    history: str
    perceive: str
    vector: str
    mood: str
    actions: str
    question: str
    pending: str
    lists: str
    reminders: str  # the pair's open reminders (router, reminders agent)
    now: str
    task: str
    thought: str
    intent: str
    retry: str
    answer: str
    previous: str
    findings: str
    request: str
    known: str  # long-term memory (design §3a)
    lore: str  # the character's lorebook entries the conversation triggered (design §11)
    greeting: str  # the character's greeting, before its first answer
    said: str  # consolidation: the user's own words
    salient: str  # consolidation: what the salience singled out
    instruction: str  # the purpose's instructions, last in every prompt (cache-shaped)


BLOCKS: dict[str, Blocks] = {
    "de": Blocks(
        summary="Zusammenfassung früherer Gespräche",
        memory="Aus deinem Kurzzeitgedächtnis",
        history="Verlauf",
        perceive="Neue Nachricht",
        vector="Gesprächsrichtung",
        mood="Deine Stimmung",
        actions="Was du gerade erledigt hast",
        question="Deine Rückfrage",
        pending="Offene Rückfrage",
        lists="Vorhandene Listen",
        reminders="Offene Erinnerungen",
        now="Jetzt",
        task="Aufgabe",
        thought="Dein eigener Gedanke (niemand hat etwas gesagt)",
        intent="Du wolltest noch etwas sagen",
        retry="Dein letzter Versuch war nicht genug",
        answer="Antwort",
        previous="Deine vorige Antwort",
        findings="Befunde",
        request="Worum es ging",
        known="Was du über den Menschen weißt",
        lore="Hintergrundwissen",
        greeting="Deine Begrüßung",
        said="Was der Mensch gesagt hat",
        salient="Was davon wichtig schien",
        instruction="Anweisung",
    ),
    "en": Blocks(
        summary="Summary of earlier conversations",
        memory="From your short-term memory",
        history="Conversation",
        perceive="New message",
        vector="Direction of the conversation",
        mood="Your mood",
        actions="What you have just done",
        question="Your question",
        pending="Open question",
        lists="Existing lists",
        reminders="Open reminders",
        now="Now",
        task="Task",
        thought="Your own thought (nobody said anything)",
        intent="You wanted to say more",
        retry="Your last attempt was not enough",
        answer="Answer",
        previous="Your previous answer",
        findings="Findings",
        request="What it was about",
        known="What you know about the person",
        lore="Background knowledge",
        greeting="Your greeting",
        said="What the person said",
        salient="What of it seemed to matter",
        instruction="Instructions",
    ),
}


@dataclass(frozen=True, slots=True)
class Tasks:
    """The responder's task line, by what the run reacts to."""

    reply: str
    question: str
    thought: str
    continue_: str
    retry: str
    regenerate: str


TASKS: dict[str, Tasks] = {
    "de": Tasks(
        reply="Antworte jetzt auf die letzte Nachricht des Menschen (die letzte USER-Zeile "
        "im Verlauf).",
        question="Stell dem Menschen jetzt deine Rückfrage.",
        thought="Niemand hat etwas gesagt. Sprich den Menschen von dir aus auf deinen "
        "eigenen Gedanken an.",
        continue_="Der Mensch hat seit deiner letzten Antwort nichts gesagt. Schreib ihm von "
        "dir aus noch einmal: {intent}",
        retry="Deine letzte Antwort hat nicht ganz getroffen, worum der Mensch gebeten hat. "
        "Ergänze, was fehlt, ohne zu wiederholen, was du schon geschrieben hast.",
        regenerate="Dein erster Entwurf hat nicht getroffen, worum der Mensch gebeten hat: "
        "{reason} Schreib die Antwort neu.",
    ),
    "en": Tasks(
        reply="Answer the person's last message now (the last USER line in the conversation).",
        question="Ask the person your question now.",
        thought="Nobody said anything. Bring up your own thought with the person on your own.",
        continue_="The person has said nothing since your last answer. Write to them once "
        "more on your own: {intent}",
        retry="Your last answer did not quite meet what the person asked for. Add what is "
        "missing without repeating what you have already written.",
        regenerate="Your first draft did not meet what the person asked for: {reason} Write "
        "the answer again.",
    ),
}


def tasks_for(language: str) -> Tasks:
    return TASKS[language_of(language)]


def blocks_for(language: str) -> Blocks:
    return BLOCKS[language_of(language)]


Parts = Sequence[tuple[str, str | None]]  # a frame's titled blocks, in order


def frame(parts: Parts) -> str:
    """Titled blocks in order; a block without content is left out (never an empty title).
    A line of a body that would read as a title is indented by a space: no text of the
    user's or of a character card's opens a block of its own."""
    return "\n\n".join(
        f"{BLOCK_PREFIX}{title}\n{_inert(body.strip())}"
        for title, body in parts
        if body and body.strip()
    )


_TITLE_LINE = re.compile(r"(?m)^(?=[ \t]*" + re.escape(BLOCK_PREFIX.strip()) + ")")


def _inert(body: str) -> str:
    return _TITLE_LINE.sub(" ", body)


def read_frame(text: str) -> dict[str, str]:
    """The blocks of a frame by title (the inverse of `frame`, for the offline model)."""
    found: dict[str, str] = {}
    title: str | None = None
    lines: list[str] = []
    for line in text.split("\n"):
        if line.startswith(BLOCK_PREFIX):
            if title is not None:
                found[title] = "\n".join(lines).strip()
            title, lines = line[len(BLOCK_PREFIX) :].strip(), []
        elif title is not None:
            lines.append(line)
    if title is not None:
        found[title] = "\n".join(lines).strip()
    return found


class PromptLibrary:
    """The templates in use: shipped ones, each replaceable from the data dir
    (`<data dir>/prompts/<lang>/<purpose>.txt`, read through `app.core.prompt_templates`)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def template(self, purpose: str, language: str) -> str:
        return read_template(self.settings, PACKAGE, f"{language_of(language)}/{purpose}.txt")

    def system(self, purpose: str, language: str, **values: Any) -> str:
        """The purpose's instructions with its fields filled in."""
        expected = PURPOSES[purpose].fields
        missing = [name for name in expected if name not in values]
        if missing:
            raise KeyError(f"prompt {purpose}: missing field(s) {', '.join(missing)}")
        return self.template(purpose, language).format(**values).strip()

    def messages(
        self,
        purpose: str,
        language: str,
        parts: Parts,
        *,
        session: Parts = (),
        **values: Any,
    ) -> list[Message]:
        """A call's prompt, shaped for a server's prompt cache (issue 36): what every call of
        a turn shares comes first and in one order — the character (the system message), then
        the session (`session`: its summary and history) — and what differs comes last: the
        purpose's own blocks (`parts`), then its instructions. So the calls of a turn, and the
        next turn's first call, begin with the same tokens, and a server that keeps a slot's
        prompt (llama.cpp `cache_prompt`, vLLM prefix caching, Ollama's kept context) prefills
        only what is new. A block of `parts` titled like a session block replaces it there
        (its place stays the session's)."""
        b = blocks_for(language)
        shared_titles = (b.summary, b.history)
        given = dict(parts)
        head = [(title, given.get(title, dict(session).get(title))) for title in shared_titles]
        rest = [(title, body) for title, body in parts if title not in shared_titles]
        instruction = self.system(purpose, language, **values)
        return [
            {"role": "system", "content": self.head(language, **values)},
            {"role": "user", "content": frame([*head, *rest, (b.instruction, instruction)])},
        ]

    def head(self, language: str, **values: Any) -> str:
        """The system message every call shares: the character (its persona)."""
        return self.template("head", language).format(persona=values.get("persona", "")).strip()
