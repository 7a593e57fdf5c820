"""Routing and planning: which agents a message wants (`agents_for`), whether a short reply
answers the open question (`answers_question`), and a request split into one task per agent
(`split_tasks`).

A message wants an agent only through a clause addressed to the character as a command
(`clauses.commands`: an imperative or a request at the clause's start, or a question about
what is kept) whose object that agent's rules recognise (`lists.list_command`,
`reminders.reminder_command`): a narrative that mentions lists, writing, remembering or
reminders in passing asks for nothing. The lists and open reminders the prompt shows tell
"Streich die Eier" (on a list) from "Streich die Wand", and "Verschieb den Zahnarzt" (a
reminder) from a story. The one command without a verb: a short "Brot und Eier auch noch
drauf" (onto the list just talked about).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.llm.offline import text as tx
from app.pipeline.offline_rules import clauses, lists, reminders

SHORT_WORDS = 8  # "Brot und Eier auch noch drauf": a verbless command is this short


@dataclass(frozen=True, slots=True)
class Known:
    """What the prompt shows is there: the lists' items, the open reminders."""

    items: set[str] = field(default_factory=set)
    reminders: list[reminders.Known] = field(default_factory=list)

    @classmethod
    def of(cls, lists_block: str = "", reminders_block: str = "") -> Known:
        return cls(lists.known_items(lists_block), reminders.known_reminders(reminders_block))


def agent_of(clause: str, known: Known) -> str:
    """The agent a command clause is for ("" when it names nothing an agent keeps)."""
    if reminders.reminder_command(clause, known.reminders):
        return "reminders"
    if lists.list_command(clause, known.items):
        return "lists"
    return ""


def tasks(text: str, known: Known | None = None) -> list[tuple[str, str]]:
    """Each command clause of `text` with its agent, in order."""
    known = known or Known()
    found = [(agent_of(c.text, known), c.text) for c in clauses.commands(text)]
    found = [(agent, task) for agent, task in found if agent]
    if not found and len(tx.words(text)) <= SHORT_WORDS and lists.ONTO_IT.search(text):
        found = [("lists", text.strip())]
    return found


def agents_for(text: str, known: Known | None = None) -> list[str]:
    return list(dict.fromkeys(agent for agent, _ in tasks(text, known)))


def split_tasks(text: str, known: Known | None = None) -> list[tuple[str, str]]:
    """One task per agent's run of command clauses, in order ("Setz Milch auf die Liste und
    erinnere mich morgen an den Zahnarzt" → lists, reminders); clauses that are no command
    are left out."""
    merged: list[tuple[str, str]] = []
    for agent, task in tasks(text, known):
        if merged and merged[-1][0] == agent:
            merged[-1] = (agent, f"{merged[-1][1]}. {task}")
        else:
            merged.append((agent, task))
    return merged


def command_text(text: str, agent: str, known: Known | None = None) -> str:
    """The part of `text` addressed to `agent` (its command clauses), or the whole text when
    it has none (an answer to the agent's own question)."""
    found = [task for name, task in tasks(text, known) if name == agent]
    return ". ".join(found) if found else text


_QUOTED = re.compile(r"[„“\"”]([^„“\"”]+)[“”\"]")


def answers_question(words: str, question: str) -> bool:
    """A short answer, or one naming an option the question offered, answers it."""
    lowered = words.casefold()
    if any(name.casefold() in lowered for name in _QUOTED.findall(question)):
        return True
    return len(tx.words(words)) <= 6 and not agents_for(words)
