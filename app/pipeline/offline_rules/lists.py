"""The lists agent's rules: which list a task names, which items it adds or removes, and
whether it shows, clears or creates a list ("Setz Milch und Brot auf die Einkaufsliste",
"Streich Milch von der Liste", "Füg Eier der Liste hinzu", "Put eggs on my shopping list")."""

from __future__ import annotations

import bisect
import re
from typing import Any, NamedTuple

from app.llm.offline import text as tx
from app.pipeline.offline_rules.routing import LIST_WORD, ONTO_IT
from app.pipeline.offline_rules.words import ARTICLE, GAP, STEM, WORD, WORD_START


class Phrase(NamedTuple):
    items: str
    target: str


class VerbPhrase:
    """`<verb> <items> <joint> <target>` ("Setz Milch auf die Liste"), found in linear time.

    A single regex with a lazy `items` group rescans up to `GAP` characters from every verb
    it meets; here verbs and joints are each found in one pass and paired by bisection, the
    first joint within `GAP` characters after a verb (and for a target closed by a word,
    "Füg Milch der Liste hinzu", the first closing word within `GAP` after the joint).
    """

    def __init__(self, verb: str, joint: str, closing: str | None = None) -> None:
        self.verb = re.compile(rf"\b(?:{verb})\s+", re.I)
        self.joint = re.compile(rf"(?<=\s)(?:{joint})(?=\s)", re.I)
        self.closing = re.compile(rf"(?<=\s)(?:{closing})\b", re.I) if closing else None

    def search(self, text: str) -> Phrase | None:
        joints = list(self.joint.finditer(text))
        joint_starts = [m.start() for m in joints]
        closing_starts = [m.start() for m in self.closing.finditer(text)] if self.closing else []
        for verb in self.verb.finditer(text):
            index = bisect.bisect_left(joint_starts, verb.end() + 1)
            if index == len(joints) or joint_starts[index] - verb.end() > GAP:
                continue
            joint = joints[index]
            found = _POLITE.sub("", text[verb.end():joint.start()].strip(), count=1) or \
                text[verb.end():joint.start()].strip()
            if "\n" in found:
                continue
            target = self._target(text, joint.end(), closing_starts)
            if target is not None:
                return Phrase(found, target)
        return None

    def _target(self, text: str, start: int, closing_starts: list[int]) -> str | None:
        if self.closing is None:
            return _SENTENCE_REST.match(text, start).group().strip()
        index = bisect.bisect_left(closing_starts, start + 1)
        if index == len(closing_starts) or closing_starts[index] - start > GAP:
            return None
        return text[start:closing_starts[index]].strip()


_POLITE = re.compile(r"^(?:bitte|please|noch)\s+(?=\S)", re.I)
_SENTENCE_REST = re.compile(rf"[^.!?]{{0,{GAP}}}")
_ADD = VerbPhrase(r"setz\w*|schreib\w*|pack\w*|trag\w*|notier\w*|put|add|write|note(?: down)?",
                  r"auf|in|zu|zur|on|onto|to")
_ADD_HINZU = VerbPhrase(r"füg\w*", r"zur|zu der|der", closing="hinzu")
_REMOVE = VerbPhrase(r"streich\w*|nimm|lösch\w*|entfern\w*|remove|cross off|take",
                     r"von|aus|from|off")
_SHOW = re.compile(r"\b(?:zeig\w*|was steht|show|what'?s on|what is on|lies)\b", re.I)
_CLEAR = re.compile(r"\b(?:leer\w*|clear|empty)\b|\blösch\w*\s+(?:die|meine)\s+(?:ganze\s+)?"
                    rf"{WORD}{{0,40}}liste\b", re.I)
_CREATE = re.compile(r"\bneue\w*\s+liste\b|\bnew list\b|\banleg\w*|\bleg\w*\b.{0,200}?\ban\b|"
                     r"\bcreate\b|\bneu\b|\bnew\b", re.I)
_NAMED_LIST = re.compile(rf"\b(?i:liste|list)\s+[„\"“']?(?P<name>[A-ZÄÖÜ]{WORD}*)", re.U)
_COMPOUND_LIST = re.compile(rf"{WORD_START}(?P<name>{STEM}{WORD}liste)\b", re.I)
_EN_LIST = re.compile(r"\b(?:the|my|our)\s+(?P<name>[\w-]+(?:\s[\w-]+)?\s+list)\b", re.I)
_ITEM_SPLIT = re.compile(r"(?<!\s)\s*[,&]\s*|(?<!\s)\s+(?:und|and)\s+", re.I)


def last_list(block: str) -> str:
    """The list changed last: the last line of the lists block ("- Name: items")."""
    names = [line[2:].split(":", 1)[0].strip() for line in block.splitlines()
             if line.startswith("- ")]
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


def parse_list_task(text: str) -> dict[str, Any]:
    command: dict[str, Any] = {"list_name": list_name(text)}
    removed = _REMOVE.search(text)
    added = _ADD_HINZU.search(text) or _ADD.search(text)
    if removed:
        command["remove"] = items(removed.items)
    elif added and LIST_WORD.search(added.target or text):
        command["add"] = items(added.items)
    elif ONTO_IT.search(text):
        command["add"] = items(text[:ONTO_IT.search(text).start()])
    elif _CLEAR.search(text):
        command["clear"] = True
    if _SHOW.search(text):
        command["show"] = True
    if re.search(r"\bneue\w*\s+liste\b|\bnew list\b|\banleg", text, re.I):
        command["create_list"] = True
    return command


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
