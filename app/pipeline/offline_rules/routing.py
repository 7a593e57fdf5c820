"""Routing and planning: which agents a message wants (`agents_for`), whether a short reply
answers the open question (`answers_question`), and a request split into one task per agent
(`split_tasks`); whether a line is nothing but such commands (`only_commands`: the
journal's offline draft leaves it out of the day's story).

A message wants an agent only through a clause addressed to the character as a command
(`clauses.commands`: an imperative or a request at the clause's start, or a question about
what is kept) whose object that agent's rules recognise (`lists.list_command`,
`reminders.reminder_command`): a narrative that mentions lists, writing, remembering or
reminders in passing asks for nothing. The lists and open reminders the prompt shows tell
"Streich die Eier" (on a list) from "Streich die Wand", and "Verschieb den Zahnarzt" (a
reminder) from a story. A pronoun as the object ("Streich die wieder", "Verschieb ihn auf
10 Uhr", "Delete it") stands for what the recent turns named (`referent`). The one command
without a verb: a short "Brot und Eier auch noch
drauf" (onto the list just talked about).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.core.grammar import PLURAL_PRONOUNS
from app.llm.offline import text as tx
from app.pipeline.offline_rules import clauses, lists, pronouns, reminders

SHORT_WORDS = 8  # "Brot und Eier auch noch drauf": a verbless command is this short


@dataclass(frozen=True, slots=True)
class Known:
    """What the prompt shows is there: the lists' items, the open reminders. `anything`: what
    was there is not known, so any item may have been on a list and any reminder open — the
    journal's reading of a past day, where a crossing-off that found nothing ("Cross the
    apples off") was a command all the same."""

    items: set[str] = field(default_factory=set)
    reminders: list[reminders.Known] = field(default_factory=list)
    anything: bool = False

    @classmethod
    def of(cls, lists_block: str = "", reminders_block: str = "") -> Known:
        return cls(lists.known_items(lists_block), reminders.known_reminders(reminders_block))


def agent_of(clause: str, known: Known) -> str:
    """The agent a command clause is for ("" when it names nothing an agent keeps)."""
    if reminders.reminder_command(clause, known.reminders, any_open=known.anything):
        return "reminders"
    if lists.list_command(clause, known.items, any_item=known.anything):
        return "lists"
    return ""


@dataclass(frozen=True, slots=True)
class Referent:
    """What a pronoun stands for: items of a list ("Milch, Eier") or an open reminder."""

    agent: str
    words: str


def referent(
    command: pronouns.PronounCommand, recent: Sequence[str], known: Known
) -> Referent | None:
    """What the pronoun of `command` stands for: the kept items or the open reminder that
    the newest of the `recent` turns names (Nova's last answer, then the user's message
    before). None when no turn names one that fits, or when the newest that does names
    several where the pronoun means one ("es", "it") or both an item and a reminder: the
    agent asks then, it does not guess."""
    for text in recent:
        found = [] if command.kind == "reminder" else lists.mentioned_items(text, known.items)
        reminder = None if command.kind == "item" else reminders.meant(text, known.reminders)
        if found and reminder is not None:
            return None
        if reminder is not None:
            return Referent("reminders", reminder.text)
        if found:
            if len(found) > 1 and command.pronoun.casefold() not in PLURAL_PRONOUNS:
                return None
            return Referent("lists", ", ".join(found))
    return None


def agent_and_task(clause: str, known: Known, recent: Sequence[str]) -> tuple[str, str]:
    """The agent a command clause is for and the clause as its task: a pronoun for its
    referent ("Streich die wieder" → "Streich Eier wieder"); a pronoun that stands for
    nothing the conversation named goes to the agent that asks which one."""
    imperative = reminders.as_imperative(clause)  # "Could you move it to 11?" → "move it to 11"
    command = pronouns.pronoun_command(imperative)
    if command is None:
        return agent_of(clause, known), clause
    found = referent(command, recent, known)
    if found is None:
        return command.agent, clause
    return found.agent, pronouns.replaced(imperative, command, found.words)


def tasks(
    text: str, known: Known | None = None, recent: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """Each command clause of `text` with its agent, in order; `recent`: the turns before
    it, newest first (`recent_turns`), which a pronoun refers to."""
    known = known or Known()
    found = [agent_and_task(c.text, known, recent) for c in clauses.commands(text)]
    found = [(agent, task) for agent, task in found if agent]
    if not found and len(tx.words(text)) <= SHORT_WORDS and lists.ONTO_IT.search(text):
        found = [("lists", text.strip())]
    return found


def agents_for(text: str, known: Known | None = None, recent: Sequence[str] = ()) -> list[str]:
    return list(dict.fromkeys(agent for agent, _ in tasks(text, known, recent)))


def only_commands(text: str, known: Known | None = None) -> bool:
    """Is `text` nothing but commands an agent keeps ("Setz Brot auf die Liste", "Erinnere
    mich an die Wäsche")? A line that also tells something ("Heute war ich im Park und setz
    Milch auf die Liste"), a command nobody keeps or somebody else's words are not. Without
    `known`, a crossing-off counts only where it names a list ("Streich die Eier" may be
    "Streich die Wand"); with `ANYTHING` whatever it names (`journal_commands`)."""
    known = known or Known()
    found = [c for c in clauses.commands(text) if agent_of(c.text, known)]
    if not found:
        return False
    rest, at = [], 0
    for clause in found:
        rest.append(text[at : clause.start])
        at = clause.end
    rest.append(text[at:])
    return all(word.casefold() in clauses.JOINTS for word in tx.words(" ".join(rest)))


ANYTHING = Known(anything=True)


def journal_commands(text: str) -> bool:
    """Is a line of a past day nothing but commands to the character, carried out or not
    (the journal's offline draft leaves it out)? What the lists and reminders held then is
    not known: a crossing-off counts whatever it names (`Known.anything`)."""
    return only_commands(text, ANYTHING)


def split_tasks(
    text: str, known: Known | None = None, recent: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """One task per agent's run of command clauses, in order ("Setz Milch auf die Liste und
    erinnere mich morgen an den Zahnarzt" → lists, reminders); clauses that are no command
    are left out."""
    merged: list[tuple[str, str]] = []
    for agent, task in tasks(text, known, recent):
        if merged and merged[-1][0] == agent:
            merged[-1] = (agent, f"{merged[-1][1]}. {task}")
        else:
            merged.append((agent, task))
    return merged


def command_text(
    text: str, agent: str, known: Known | None = None, recent: Sequence[str] = ()
) -> str:
    """The part of `text` addressed to `agent` (its command clauses, a pronoun replaced by
    what it stands for), or the whole text when it has none (an answer to the agent's own
    question)."""
    found = [task for name, task in tasks(text, known, recent) if name == agent]
    return ". ".join(found) if found else text


_QUOTED = re.compile(r"[„“\"”]([^„“\"”]+)[“”\"]")


def answers_question(words: str, question: str) -> bool:
    """A short answer, or one naming an option the question offered, answers it."""
    lowered = words.casefold()
    if any(name.casefold() in lowered for name in _QUOTED.findall(question)):
        return True
    return len(tx.words(words)) <= 6 and not agents_for(words)


def recent_turns(history: str) -> list[str]:
    """What a pronoun in the newest user message may refer to: the turns before it — the
    character's last answer and the user's message before — newest first."""
    said = tx.contributions(history)
    users = [index for index, c in enumerate(said) if c.is_user]
    before = said[: users[-1]] if users else said
    last_user = next((c for c in reversed(before) if c.is_user), None)
    last_answer = next((c for c in reversed(before) if not c.is_user), None)
    turns = [c for c in (last_answer, last_user) if c is not None]
    turns.sort(key=before.index, reverse=True)
    return [c.text for c in turns]
