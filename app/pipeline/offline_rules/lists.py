"""The lists agent's rules: which list a task names, which items it adds or removes, and
whether it shows, clears or creates a list ("Setz Milch und Brot auf die Einkaufsliste",
"Streich Milch von der Liste", "Füg Eier der Liste hinzu", "Put eggs on my shopping list").
An item can be crossed off without naming its list ("Streich die Eier", "Nimm die Eier
runter", "Cross off the eggs"): the agent finds the list that has it; the router counts such
a command only for an item that is on a list (`list_command`), so "Streich die Wand" stays
a conversation."""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection
from typing import Any, NamedTuple

from app.llm.offline import text as tx
from app.pipeline.offline_rules.words import ARTICLE, GAP, STEM, WORD, WORD_START

LIST_WORD = re.compile(
    rf"(?:{WORD_START}{STEM}{WORD}liste\b|\bliste\b|\blisten\b|\bto-?do\b|\blist\b)", re.I
)
# "Brot und Eier auch noch drauf": onto the list just talked about.
ONTO_IT = re.compile(
    r"\b(?:(?:auch|noch|mit|bitte)\s+){0,3}(?:drauf|darauf|on it|on there)\b"
    r"[\s.!]*$",
    re.I,
)


class Phrase(NamedTuple):
    items: str
    target: str


class VerbPhrase:
    """`<verb> <items> <joint> <target>` ("Setz Milch auf die Liste"), found in linear time.

    A single regex with a lazy `items` group rescans up to `GAP` characters from every verb
    it meets; here verbs and joints are each found in one pass and paired by bisection, the
    first joint within `GAP` characters after a verb — with `target`, the first whose next
    four words match it, so "Put X that has to wrap on the list" is not cut at "to" — (and for
    a target closed by a word, "Füg Milch der Liste hinzu", the first closing word within
    `GAP` after the joint).
    """

    def __init__(
        self,
        verb: str,
        joint: str,
        closing: str | None = None,
        target: re.Pattern[str] | None = None,
    ) -> None:
        self.verb = re.compile(rf"\b(?:{verb})\s+", re.I)
        self.joint = re.compile(rf"(?<=\s)(?:{joint})(?=\s)", re.I)
        self.closing = re.compile(rf"(?<=\s)(?:{closing})\b", re.I) if closing else None
        self.wanted = target  # a target must match it ("… to wrap on the list": the list's "on")

    def search(self, text: str) -> Phrase | None:
        joints = list(self.joint.finditer(text))
        joint_starts = [m.start() for m in joints]
        closing_starts = [m.start() for m in self.closing.finditer(text)] if self.closing else []
        if self.closing is not None and not closing_starts:
            return None  # a phrase closed by a word ("… hinzu") that the text never has
        for verb in self.verb.finditer(text):
            index = bisect.bisect_left(joint_starts, verb.end() + 1)
            while index < len(joints) and joint_starts[index] - verb.end() <= GAP:
                joint = joints[index]
                index += 1
                # The target first: a bisection, where the items are a slice and a regex of
                # up to GAP characters — done for every joint of every verb, the items made
                # the phrase's worst case ("füg der füg der …") cost a hundred times more.
                # (A joint with no target is passed over; the next joint's items hold this
                # one's, a line break among them included, so the break below still ends it.)
                target = self._target(text, joint.end(), closing_starts)
                if target is None:
                    continue
                found = (
                    _POLITE.sub("", text[verb.end() : joint.start()].strip(), count=1)
                    or text[verb.end() : joint.start()].strip()
                )
                if "\n" in found:
                    break
                head = " ".join(target.split()[:4])
                if (
                    self.wanted is not None
                    and not self.wanted.search(head)
                    and index < len(joints)
                    and joint_starts[index] - verb.end() <= GAP
                ):
                    continue  # a later joint may lead to what it is wanted for
                return Phrase(found, target)
        return None

    def _target(self, text: str, start: int, closing_starts: list[int]) -> str | None:
        if self.closing is None:
            rest = _SENTENCE_REST.match(text, start)
            assert rest is not None  # {0,GAP} matches everywhere, maybe empty
            return rest.group().strip()
        index = bisect.bisect_left(closing_starts, start + 1)
        if index == len(closing_starts) or closing_starts[index] - start > GAP:
            return None
        return text[start : closing_starts[index]].strip()


_POLITE = re.compile(r"^(?:bitte|please|noch)\s+(?=\S)", re.I)
_SENTENCE_REST = re.compile(rf"[^.!?]{{0,{GAP}}}")
_ADD = VerbPhrase(
    r"setz\w*|schreib\w*|pack\w*|trag\w*|notier\w*|put|add|write|note(?: down)?",
    r"auf|in|zu|zur|on|onto|to",
    target=LIST_WORD,
)
_ADD_HINZU = VerbPhrase(r"füg\w*", r"zur|zu der|der", closing="hinzu")
_REMOVE = VerbPhrase(
    r"streich\w*|nimm|lösch\w*|entfern\w*|remove|cross off|cross|take|strike|delete|scratch",
    r"von|aus|from|off",
)
# "Streich die Eier", "Nimm die Eier runter", "Cross off the eggs", "Take the eggs off":
# a removal whose list is not named (the items run to the clause's end, or to its particle).
_BARE_REMOVE = re.compile(
    r"\A(?:(?:bitte|please|und|and|dann|then|noch|auch|mal)\s+){0,3}"
    r"(?:streich(?:e|en\s+sie)?|lösch(?:e|en\s+sie)?|entfern(?:e|en\s+sie)?|nimm|"
    r"cross(?:\s+off)?|remove|delete|take|scratch|strike)\s+(?:(?:bitte|please|mal|noch)\s+)?"
    rf"(?P<items>[^.!?;\n]{{1,{GAP}}}?)"
    r"(?:\s+(?:wieder\s+)?(?:runter|weg|raus|ab|off|out)\b)?\s*[.!?]*$",
    re.I,
)
# "Kannst du Käse auf die Einkaufsliste setzen?": the request's verb comes last.
_MODAL_DU = (
    r"\A(?:(?:bitte|und|dann|noch|auch|mal)\s+){0,3}(?:kannst|könntest|würdest|magst|"
    r"kann|könnte|würde|können|könnten|würden)\s+(?:du|sie)\s+"
    r"(?:(?:bitte|mal|noch|auch|doch)\s+){0,3}"
)
_REQUEST_ADD = re.compile(
    _MODAL_DU + rf"(?P<items>[^.!?;\n]{{1,{GAP}}}?)\s+(?:auf|in|zu|zur)\s+"
    rf"(?P<target>[^.!?;\n]{{1,{GAP}}}?)\s+(?:setzen|schreiben|packen|eintragen|notieren|"
    r"aufschreiben|hinzufügen|tun)\b",
    re.I,
)
_REQUEST_REMOVE = re.compile(
    _MODAL_DU + rf"(?P<items>[^.!?;\n]{{1,{GAP}}}?)\s+(?:(?:von|aus)\s+"
    rf"(?P<target>[^.!?;\n]{{1,{GAP}}}?)\s+)?(?:wieder\s+)?(?:streichen|nehmen|löschen|"
    r"entfernen|runternehmen|wegnehmen|rausnehmen)\b",
    re.I,
)
_SHOW = re.compile(r"\b(?:zeig\w*|was steht|show|what'?s on|what is on|lies)\b", re.I)
_CLEAR = re.compile(
    r"\b(?:leer\w*|clear|empty)\b|\blösch\w*\s+(?:die|meine)\s+(?:ganze\s+)?"
    rf"{WORD}{{0,40}}liste\b",
    re.I,
)
_CREATE = re.compile(
    r"\bneue\w*\s+liste\b|\bnew list\b|\banleg\w*|\bleg\w*\b.{0,200}?\ban\b|"
    r"\bcreate\b|\bneu\b|\bnew\b",
    re.I,
)
_NAMED_LIST = re.compile(rf"\b(?i:liste|list)\s+[„\"“']?(?P<name>[A-ZÄÖÜ]{WORD}*)", re.U)
_COMPOUND_LIST = re.compile(rf"{WORD_START}(?P<name>{STEM}{WORD}liste)\b", re.I)
_EN_LIST = re.compile(r"\b(?:the|my|our)\s+(?P<name>[\w-]+(?:\s[\w-]+)?\s+list)\b", re.I)
_ITEM_SPLIT = re.compile(r"(?<!\s)\s*[,&]\s*|(?<!\s)\s+(?:und|and)\s+", re.I)


def last_list(block: str) -> str:
    """The list changed last: the last line of the lists block ("- Name: items")."""
    names = [
        line[2:].split(":", 1)[0].strip() for line in block.splitlines() if line.startswith("- ")
    ]
    return names[-1] if names else ""


def list_name(text: str) -> str:
    for pattern in (_NAMED_LIST, _COMPOUND_LIST, _EN_LIST):
        match = pattern.search(text)
        if match:
            return match.group("name").strip(" „“\"'”")
    return ""


_FILLERS = re.compile(r"\b(?:wieder|bitte|noch|auch|mal|doch|gleich|please|again|too)\b", re.I)


def items(text: str) -> list[str]:
    found = []
    for part in _ITEM_SPLIT.split(text.strip(" .!?")):
        # "Nimm Milch wieder von der Liste": the filler words are no part of the item.
        part = " ".join(_FILLERS.sub(" ", part).split())
        item = ARTICLE.sub("", part.strip(" „“\"'”.")).strip()
        if item:
            found.append(item)
    return found


def _phrase(pattern: re.Pattern[str], text: str) -> Phrase | None:
    found = pattern.match(text.strip())
    return Phrase(found.group("items"), found.group("target") or "") if found else None


def parse_list_task(text: str) -> dict[str, Any]:
    command: dict[str, Any] = {"list_name": list_name(text)}
    removed = _phrase(_REQUEST_REMOVE, text) or _REMOVE.search(text)
    added = _phrase(_REQUEST_ADD, text) or _ADD_HINZU.search(text) or _ADD.search(text)
    if removed:
        command["remove"] = items(removed.items)
    elif added and LIST_WORD.search(added.target or text):
        command["add"] = items(added.items)
    elif onto := ONTO_IT.search(text):
        command["add"] = items(text[: onto.start()])
    elif _CLEAR.search(text):
        command["clear"] = True
    if _SHOW.search(text):
        command["show"] = True
    if _CREATE_NEW.search(text):
        command["create_list"] = True
    if not (command.get("remove") or command.get("add") or command.get("clear")):
        bare = bare_removal(text)
        if bare:
            command["remove"] = bare
    return command


_CREATE_NEW = re.compile(r"\bneue\w*\s+liste\b|\bnew list\b|\banleg", re.I)


def bare_removal(clause: str) -> list[str]:
    """The items of a removal that names no list ("Streich die Eier" → ["Eier"])."""
    if LIST_WORD.search(clause):
        return []
    found = _BARE_REMOVE.match(clause.strip())
    return items(found.group("items")) if found else []


def known_items(lists_block: str) -> set[str]:
    """Every item on the lists as the prompt shows them ("- Name: a, b"), normalized."""
    found: set[str] = set()
    for line in lists_block.splitlines():
        if line.startswith("- ") and ":" in line:
            found.update(" ".join(i.split()).casefold() for i in line.split(":", 1)[1].split(","))
    return found


def mentioned_items(text: str, known: Collection[str]) -> list[str]:
    """The kept items (`known_items`) that `text` names, as it spells them, in its order
    ("Eier stehen jetzt auf der Liste" → ["Eier"])."""
    lowered = text.casefold()
    found = []
    for item in known:
        if not item:
            continue
        at = re.search(rf"(?<!{WORD}){re.escape(item)}(?!{WORD})", lowered)
        if at is not None:
            found.append((at.start(), text[at.start() : at.end()]))
    return [spelled for _, spelled in sorted(found)]


def list_command(clause: str, known: Collection[str] = (), *, any_item: bool = False) -> bool:
    """Whether a command clause names what a list command needs: a list for adding, showing,
    clearing or making one, or — for crossing off — a list or an item that is on one (with
    `any_item`, any item: what the lists held is not known)."""
    named = bool(LIST_WORD.search(clause))
    removed = _phrase(_REQUEST_REMOVE, clause) or _REMOVE.search(clause)
    if removed and (
        LIST_WORD.search(removed.target) or _any_known(items(removed.items), known, any_item)
    ):
        return True
    added = _phrase(_REQUEST_ADD, clause) or _ADD_HINZU.search(clause) or _ADD.search(clause)
    if named and (
        added or _SHOW.search(clause) or _CLEAR.search(clause) or _CREATE_NEW.search(clause)
    ):
        return True
    if ONTO_IT.search(clause) and (_ADD.search(clause + " auf die Liste") or named):
        return True
    return _any_known(bare_removal(clause), known, any_item)


def _any_known(found: list[str], known: Collection[str], any_item: bool = False) -> bool:
    if any_item:
        return bool(found)
    return any(" ".join(item.split()).casefold() in known for item in found)


def command(task: str, lists_block: str, resuming: bool) -> dict[str, Any]:
    """The `agent_lists` answer for a task; `lists_block` is the lists as the prompt shows
    them, `resuming` whether the task answers the agent's own "which list?"."""
    if not resuming:
        found = parse_list_task(task)
        if not found["list_name"] and ONTO_IT.search(task):
            found["list_name"] = last_list(lists_block)
        return found
    # Resuming: the task is the user's answer to "which list?".
    found = parse_list_task(task)
    if found.get("add") or found.get("remove") or found.get("show") or found.get("clear"):
        return found
    if _CREATE.search(task):
        return {"create_list": True, "list_name": list_name(task)}
    answer = " ".join(tx.words(task))
    return {"list_name": found.get("list_name") or answer}
