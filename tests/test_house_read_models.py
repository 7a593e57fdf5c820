"""A typed face for every room (issue 37 item 3, the dict half): no public function of a room
below the API (`app/` but `app/api` and `app/wiring`, which sit above it) answers
`dict[str, Any]` — it answers a read model (a msgspec struct, `app/journal/models.py`), and
the API encodes it (`app/api/wire.py`).

What still answers a dict is named below with its reason: free-form JSON documents by design
(a backup's manifest, a card, a model's JSON answer before its struct reads it, log fields).
A name here that no longer answers a dict fails too, so the table only shrinks.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.house_support import ROOT, Module, parse_tree

ABOVE_THE_ROOMS = ("app.api", "app.wiring")

DOCUMENT = "a free-form JSON document by design (its format is versioned, not a struct's)"
MODEL_ANSWER = "the offline model's JSON answer, read by the stage's own struct like a real one"
LOG = "a log record's extra fields (`app.core.log`), keyed by name"

EXCEPTIONS: dict[str, str] = {
    "app.backup.archive:write_manifest": DOCUMENT,
    "app.backup.exports:document_head": DOCUMENT,
    "app.backup.redis_snapshot:read_records": DOCUMENT,
    "app.characters.book:CharacterDefinition.toml_data": "a character's TOML file as data",
    "app.characters.book:baseline_data": "a character's TOML file as data",
    "app.characters.book:read_card_file": DOCUMENT + ": a character card",
    "app.characters.cards:map_card": DOCUMENT + ": a character card",
    "app.characters.cards:card_document": DOCUMENT + ": a character card",
    "app.consolidation.offline:consolidation": MODEL_ANSWER,
    "app.consolidation.offline:salience": MODEL_ANSWER,
    "app.core.lenient:readable_fields": "a stored record's fields a struct can read (lenient)",
    "app.core.log:fields": LOG,
    "app.core.settings:Settings.values": "the settings table by name (one row per setting)",
    "app.core.settings:Settings.public": "the settings table by name (one row per setting)",
    "app.llm.detect:Detected.as_dict": LOG,
    "app.llm.offline.handlers:LexiconPerception.values": MODEL_ANSWER,
    "app.llm.offline.handlers:perception": MODEL_ANSWER,
    "app.llm.schema:json_schema": "a JSON Schema for the model's structured output",
    "app.llm.trace:Trace.log_fields": LOG,
    "app.memory.summary:summary_messages": "a model call's chat messages (role, content)",
    "app.memory.turns:emotion_fields": "a turn's stored fields, written to its Redis hash",
    "app.pipeline.offline:router": MODEL_ANSWER,
    "app.pipeline.offline:planner": MODEL_ANSWER,
    "app.pipeline.offline:agent_lists": MODEL_ANSWER,
    "app.pipeline.offline:agent_reminders": MODEL_ANSWER,
    "app.pipeline.offline:thinker": MODEL_ANSWER,
    "app.pipeline.offline:salience": MODEL_ANSWER,
    "app.pipeline.offline:salience_character": MODEL_ANSWER,
    "app.pipeline.offline_rules.lists:parse_list_task": MODEL_ANSWER,
    "app.pipeline.offline_rules.lists:command": MODEL_ANSWER,
    "app.pipeline.offline_rules.reminders:command": MODEL_ANSWER,
    "app.profiles.interaction.portability:export": DOCUMENT,
    "app.profiles.writing.package:build_package": DOCUMENT + ": the profile package",
    "app.profiles.writing.package:mask_package": DOCUMENT + ": the profile package",
    "app.profiles.writing.portability:export_writing": DOCUMENT,
    "app.profiles.writing.portability:export_both": DOCUMENT,
    "app.profiles.writing.review:offline_review": MODEL_ANSWER,
    "app.profiles.writing.service:ProfileService.package": DOCUMENT + ": the profile package",
    "app.profiles.writing.service:ProfileService.export": DOCUMENT,
}


@pytest.fixture(scope="module")
def rooms() -> list[Module]:
    return [
        module
        for name, module in parse_tree(ROOT, ("app",)).items()
        if not name.startswith(ABOVE_THE_ROOMS) and name != "app"
    ]


def _answers_a_dict(returns: ast.expr | None) -> bool:
    """`dict[str, Any]` anywhere in the annotation (`list[dict[str, Any]]`, `… | None`)."""
    if returns is None:
        return False
    text = ast.unparse(returns).replace(" ", "").replace("typing.", "")
    return any(form in text for form in ("dict[str,Any]", "Dict[str,Any]"))


def _public_functions(
    body: list[ast.stmt], prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from _public_functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not node.name.startswith("_"):
                yield (f"{prefix}{node.name}", node)


def dict_answers(module: Module) -> list[str]:
    """`module:qualname` of each public function or method of `module` answering a dict."""
    return [
        f"{module.name}:{name}"
        for name, node in _public_functions(module.tree.body)
        if _answers_a_dict(node.returns)
    ]


def test_no_public_function_of_a_room_answers_an_untyped_dict(rooms: list[Module]) -> None:
    found = [name for module in rooms for name in dict_answers(module)]
    unnamed = sorted(set(found) - set(EXCEPTIONS))
    assert not unnamed, (
        "answer a read model (a msgspec struct the API encodes), or name it with a reason in "
        f"EXCEPTIONS: {unnamed}"
    )


def test_every_named_exception_still_answers_a_dict(rooms: list[Module]) -> None:
    found = {name for module in rooms for name in dict_answers(module)}
    assert not sorted(set(EXCEPTIONS) - found), "made typed: take it out of EXCEPTIONS"


def test_every_exception_says_why() -> None:
    assert all(reason.strip() for reason in EXCEPTIONS.values())


PLANTED = '''
from typing import Any
import typing

def view(row) -> dict[str, Any]: ...
async def rows(conn) -> list[dict[str, Any]]: ...
def maybe() -> typing.Dict[str, Any] | None: ...
def _private() -> dict[str, Any]: ...
def typed() -> dict[str, int]: ...
class Store:
    def entry(self) -> dict[str, Any]: ...
    def _inner(self) -> dict[str, Any]: ...
class _Hidden:
    def shown(self) -> dict[str, Any]: ...
'''


def test_a_planted_dict_answer_is_caught() -> None:
    module = Module(
        "app.somewhere.thing",
        Path("app/somewhere/thing.py"),
        False,
        ast.parse(textwrap.dedent(PLANTED)),
    )
    assert dict_answers(module) == [
        "app.somewhere.thing:view",
        "app.somewhere.thing:rows",
        "app.somewhere.thing:maybe",
        "app.somewhere.thing:Store.entry",
    ]
