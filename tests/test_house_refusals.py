"""House rule, one refusal (issue 37, item 4): a handler module of app/api does not map a room's
exception to the error shape by hand. A room's refusal is a `Refused` kind that the error
middleware answers as it is; an `except` in app/api that catches one, or that answers with
`raise ApiError(...)`, is a hand mapping — allowed only where the table below names it with
its reason. The rule is read from the syntax tree and fails on a planted mapping."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import pytest

from app.api.errors import ApiError
from app.core.refusal import Refused
from app.wiring import server  # noqa: F401  (imports every room, so every kind is defined)
from tests.house_support import ROOT, Module, parse_module, parse_tree

# (module, caught name) → why this `except` stays where it is.
LEFT = {
    ("app.api.validation", "WrongShape"): "the body reader, the one place a JSON body is "
    "decoded for every route: json_input is a core helper, not a room",
    ("app.api.validation", "NotJson"): "the body reader, as above",
    ("app.api.validation", "error"): "zlib's error for a body that is not what its "
    "Content-Encoding says: the standard library's, logged here with the request's path",
    ("app.api.profile", "HasNul"): "the pasted result: a NUL is refused, anything else not "
    "JSON is read on as text (json_input is a core helper)",
    ("app.api.profile", "InvalidName"): "the governance's label check, named for the field "
    "it checks (a facet's name: invalid_name, a trait's: invalid_key)",
    ("app.api.profile", "ModelError"): "the gateway's error: its `status` is the provider's "
    "HTTP status and its text names the code for the logs, so it is no `Refused`",
    ("app.api.profile", "EgressRefused"): "a ModelError (above), answered 422 on this route",
    ("app.api.profile", "ResultInvalid"): "not a mapping: `nothing_to_apply` is a 200 answer "
    "here, every other kind is raised on as it is",
    ("app.api.reminders", "DueTimeRefused"): "the same refusal raised on with the way out "
    "('give a new due_at') for a reminder opened again",
    ("app.api.backups", "ExportError"): "one exception of the exports room for the query and "
    "for the imported document: the route names which (invalid_export 404/400, invalid_import)",
    ("app.api.journal", "ExportError"): "the diary reader's, as above (invalid_diary)",
    ("app.api.journal", "ValueError"): "the core date and moment readers' (invalid_date, "
    "invalid_at naming the message's index)",
    ("app.api.llm", "ValueError"): "urllib's and ipaddress's, for a URL (invalid_url)",
}


@dataclass(frozen=True)
class Mapping:
    module: str
    line: int
    caught: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} maps {self.caught} by hand"


def refused_names() -> set[str]:
    """The class names of every `Refused` kind of app/ (ApiError is the handlers' own)."""
    found, todo = set(), [Refused]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("app.") and sub.__name__ not in found:
                found.add(sub.__name__)
                todo.append(sub)
    return found - {ApiError.__name__}


def caught_names(handler: ast.ExceptHandler) -> list[str]:
    """`except A`, `except m.A`, `except (A, B)` → their last names."""
    if handler.type is None:
        return []
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return [t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "") for t in types]


def answers_by_hand(handler: ast.ExceptHandler) -> bool:
    """The handler's body raises `ApiError(...)` (a new error answer, not the caught one)."""
    for node in ast.walk(ast.Module(body=handler.body, type_ignores=[])):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            func = node.exc.func
            if getattr(func, "id", getattr(func, "attr", "")) == "ApiError":
                return True
    return False


def hand_mappings(modules: dict[str, Module], kinds: set[str]) -> list[Mapping]:
    found = []
    for module in modules.values():
        if not module.name.startswith("app.api.") or module.name == "app.api.errors":
            continue
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.ExceptHandler):
                continue
            names = caught_names(node)
            if answers_by_hand(node) or any(name in kinds for name in names):
                found += [Mapping(module.name, node.lineno, name) for name in names]
    return found


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return parse_tree(ROOT, ("app",))


def test_no_handler_maps_a_room_exception_by_hand(modules):
    found = hand_mappings(modules, refused_names())
    unexplained = [str(m) for m in found if (m.module, m.caught) not in LEFT]
    assert not unexplained, "answer these as Refused kinds:\n" + "\n".join(unexplained)


def test_every_exception_left_is_still_there(modules):
    """The table shrinks with the code: an entry whose `except` is gone goes too."""
    found = {(m.module, m.caught) for m in hand_mappings(modules, refused_names())}
    assert set(LEFT) <= found, sorted(set(LEFT) - found)


PLANTED = """
from app.api.errors import ApiError
from app.characters.cards import CardError
from app.core.settings import SettingsError


async def post_card(request):
    try:
        return await read(request)
    except CardError as exc:
        raise ApiError(400, "invalid_card", str(exc)) from None


async def put_setting(request):
    try:
        change(request)
    except SettingsError:
        return None
"""


def test_the_rule_catches_a_planted_mapping(tmp_path):
    """A mapping to ApiError, and a caught Refused kind answered otherwise, are both found."""
    path = tmp_path / "app" / "api" / "planted.py"
    path.parent.mkdir(parents=True)
    path.write_text(PLANTED, encoding="utf-8")
    planted = parse_module(tmp_path, path)
    found = hand_mappings({planted.name: planted}, refused_names())
    assert [(m.module, m.caught) for m in found] == [
        ("app.api.planted", "CardError"),
        ("app.api.planted", "SettingsError"),
    ]
