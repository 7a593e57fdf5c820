"""A command whose object is a pronoun (issue 21, item 2): "Streich die wieder", "Nimm sie
runter", "Lösch sie", "Verschieb ihn auf 10 Uhr", "Cross it off", "Delete it", "move it to
10". The pronoun stands for what the conversation is about; `routing.referent` finds it in
the recent turns, and `replaced` puts it in the pronoun's place ("Streich Eier wieder").

The verb says what the pronoun may stand for: crossing off and taking down ("nimm … runter",
"take … off", "cross … off") a list item; moving ("verschieb", "move") a reminder; deleting
("lösch", "streich", "delete", "remove") either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from app.core.grammar import OBJECT_PRONOUNS
from app.pipeline.offline_rules.words import GAP

Kind = Literal["item", "reminder", "either"]

_PRONOUN = "|".join(sorted(OBJECT_PRONOUNS, key=len, reverse=True))
_COMMAND = re.compile(
    r"\A(?:(?:bitte|please|und|and|dann|then|noch|auch|mal|jetzt|now|ok|okay)[\s,]+){0,3}"
    r"(?P<verb>[^\W\d_]{2,20}(?:\s+off)?)\s+(?:(?:bitte|please|mal|doch|noch|gleich)\s+)?"
    rf"(?P<pronoun>(?:{_PRONOUN})(?:\s+(?:one|da))?)\b(?P<rest>[^.!?;\n]{{0,{GAP}}})"
    r"[.!?\s]*\Z",
    re.I,
)
_ITEM_VERBS = re.compile(r"(?:nimm|take|cross(?:\s+off)?)\Z", re.I)
_EITHER_VERBS = re.compile(
    r"(?:streich|lösch|entfern)(?:e|en)?\Z|(?:delete|remove|scratch|"
    r"strike|cancel)\Z",
    re.I,
)
_MOVE_VERBS = re.compile(
    r"(?:verschieb|verleg)(?:e|en)?\Z|(?:move|reschedule|push|postpone|"
    r"shift)\Z",
    re.I,
)
_FILLER = r"(?:\s+(?:wieder|bitte|doch|mal|auch|noch|gleich|please|again|too|now|jetzt)){0,4}"
# After the pronoun of a removal: fillers, a particle, a list named ("… von der Liste").
_REMOVAL_REST = re.compile(
    r"\A" + _FILLER + r"(?:\s+(?:(?:wieder\s+)?(?:runter|weg|raus|ab)|off|out)\b)?"
    r"(?:\s+(?:von|aus|from|off)\s+(?:der|dem|den|the|my|meiner|meinem|unserer)\s+[\w-]{1,60}"
    r"(?:\s+list)?)?" + _FILLER + r"\s*\Z",
    re.I,
)
_PARTICLE = re.compile(r"\b(?:runter|weg|raus|off|out)\b", re.I)
# After the pronoun of a move: its new time ("auf 10 Uhr", "to 10", "morgen") or nothing.
_MOVE_REST = re.compile(
    r"\A" + _FILLER + r"(?:\s+(?:auf|um|nach|to|at|for|until|till|in|by|morgen|übermorgen|tomorrow|"
    rf"today|heute)\b[^.!?;\n]{{0,{GAP}}})?\s*\Z",
    re.I,
)


@dataclass(frozen=True, slots=True)
class PronounCommand:
    pronoun: str
    kind: Kind
    start: int  # where the pronoun stands in the clause
    end: int

    @property
    def agent(self) -> str:
        """Who asks "which one?" when the conversation names nothing that fits: a move is
        the reminders agent's, any other the lists agent's."""
        return "reminders" if self.kind == "reminder" else "lists"


def pronoun_command(clause: str) -> PronounCommand | None:
    """The clause as a command on a pronoun ("Nimm sie runter"), or None."""
    found = _COMMAND.match(clause.strip())
    if found is None:
        return None
    verb, rest = found.group("verb"), found.group("rest")
    offset = len(clause) - len(clause.lstrip())
    at = (found.start("pronoun") + offset, found.end("pronoun") + offset)
    if _MOVE_VERBS.match(verb):
        return (
            PronounCommand(found.group("pronoun"), "reminder", *at)
            if _MOVE_REST.match(rest)
            else None
        )
    if not _REMOVAL_REST.match(rest):
        return None
    if _ITEM_VERBS.match(verb):
        # They need their particle ("Nimm sie runter", "Take it off", "Cross off them"):
        # "Take it." alone is no removal.
        if not verb.casefold().endswith("off") and not _PARTICLE.search(rest):
            return None
        return PronounCommand(found.group("pronoun"), "item", *at)
    if _EITHER_VERBS.match(verb):
        return PronounCommand(found.group("pronoun"), "either", *at)
    return None


def replaced(clause: str, command: PronounCommand, words: str) -> str:
    """The clause with `words` in the pronoun's place ("Streich die wieder" → "Streich Eier
    wieder")."""
    return f"{clause[: command.start]}{words}{clause[command.end :]}"
