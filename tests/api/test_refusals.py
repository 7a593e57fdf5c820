"""One refusal (design §9): every `Refused` kind a room below the API raises is answered by the
error middleware as it is — its status, its code, its message in the one error shape — with
no handler mapping it; anything else that escapes a handler is the documented 500. Through the
real server: a route added for the test raises each kind."""

from __future__ import annotations

import ast

import pytest
from aiohttp import web

from app.api.searches import TooManySearches
from app.auth.credentials import LoginBackoff
from app.backup.diary_import import ImportTooLarge
from app.backup.service import BackupBusy
from app.characters.book import CharacterError
from app.characters.cards import CardError
from app.characters.pictures import PictureError
from app.characters.service import UnknownCharacter
from app.characters.store import CharacterExists, NoDataDir, NotOwn
from app.core.refusal import Refused, RefusedKind
from app.core.settings import SettingsError
from app.journal.jobs import NoUserSources
from app.journal.media import MediaRefused
from app.memory.history import InvalidCursor, ScanTooLong
from app.memory.reminders import DueTimeError, DueTimeRefused, ReminderMissing, TooManyReminders
from app.profiles.governance import PortableError
from app.profiles.writing.package import ResultInvalid
from app.storage.errors import Conflict, Missing
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.house_support import ROOT, parse_tree

# Each kind as a room raises it, and the answer it documents: status, code, message.
KINDS = {
    "missing": (
        Missing("there is no list 'Einkauf'"),
        404,
        "not_found",
        "there is no list 'Einkauf'",
    ),
    "reminder_missing": (
        ReminderMissing("there is no reminder 'r1'"),
        404,
        "not_found",
        "there is no reminder 'r1'",
    ),
    "conflict": (
        Conflict("entry_exists", "2026-03-01 has an entry already; edit it"),
        409,
        "entry_exists",
        "2026-03-01 has an entry already; edit it",
    ),
    "media": (
        MediaRefused(415, "unsupported_media", "not a photo this app takes"),
        415,
        "unsupported_media",
        "not a photo this app takes",
    ),
    "result": (
        ResultInvalid(422, "invalid_result", "the result is not JSON"),
        422,
        "invalid_result",
        "the result is not JSON",
    ),
    "character": (CharacterError("name: empty"), 400, "invalid_character", "name: empty"),
    "character_exists": (
        CharacterExists("'mira' is taken"),
        409,
        "character_exists",
        "'mira' is taken",
    ),
    "not_own": (NotOwn("'mira' is built in"), 409, "not_own", "'mira' is built in"),
    "no_data_dir": (NoDataDir("no data dir"), 400, "invalid_character", "no data dir"),
    "unknown_character": (
        UnknownCharacter("no character 'x'"),
        404,
        "unknown_character",
        "no character 'x'",
    ),
    "card": (CardError("not a card"), 400, "invalid_card", "not a card"),
    "picture": (PictureError("not a picture"), 400, "invalid_picture", "not a picture"),
    "backup_busy": (
        BackupBusy("a backup is being taken"),
        409,
        "backup_running",
        "a backup is being taken",
    ),
    "import_too_large": (
        ImportTooLarge("the 20 photos of this 9000-byte archive declare too many pixels"),
        413,
        "import_too_large",
        "the 20 photos of this 9000-byte archive declare too many pixels",
    ),
    "no_user_sources": (
        NoUserSources("no user text"),
        422,
        "no_user_sources",
        "no user text",
    ),
    "portable": (
        PortableError("not a profile document"),
        400,
        "invalid_document",
        "not a profile document",
    ),
    "setting": (
        SettingsError("temperature: out of range"),
        400,
        "invalid_setting",
        "temperature: out of range",
    ),
    "cursor": (
        InvalidCursor("before is not a cursor this server gave"),
        400,
        "invalid_cursor",
        "before is not a cursor this server gave",
    ),
    "due_time": (DueTimeError("not a time"), 400, "invalid_due_at", "not a time"),
    "due_refused": (
        DueTimeRefused("past", "due_at lies in the past"),
        400,
        "invalid_due_at",
        "due_at lies in the past",
    ),
    "too_many_reminders": (
        TooManyReminders(3),
        429,
        "too_many_reminders",
        "at most 3 reminders may be pending per character",
    ),
    "search_too_broad": (
        ScanTooLong("this history has more than 5 lines: search for a longer text"),
        422,
        "search_too_broad",
        "this history has more than 5 lines: search for a longer text",
    ),
    "too_many_searches": (
        TooManySearches("6 of your searches are running or waiting", {"Retry-After": "1"}),
        429,
        "too_many_searches",
        "6 of your searches are running or waiting",
    ),
    "login_backoff": (
        LoginBackoff(7),
        429,
        "login_backoff",
        "too many failed logins; try again in 7 s",
    ),
}
# A kind's headers, answered with it.
HEADERS = {
    "login_backoff": {"Retry-After": "7"},
    "too_many_searches": {"Retry-After": "1"},
}


def refused_kinds() -> set[type[Refused]]:
    """Every subclass of `Refused` the app defines (all of app/ is imported by the wiring)."""
    found, todo = set(), [Refused]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("app.") and sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


@pytest.fixture
def app(settings) -> web.Application:
    app = create_app(settings, local_token=TOKEN)

    async def raises(request: web.Request) -> web.Response:
        kind = request.match_info["kind"]
        if kind == "crash":
            raise RuntimeError("a bug: this text never reaches the client")
        raise KINDS[kind][0]

    app.router.add_get("/api/test-refusal/{kind}", raises)
    return app


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_every_refused_kind_is_answered_as_it_is(client, kind):
    _, status, code, message = KINDS[kind]
    response = await client.get(f"/api/test-refusal/{kind}", headers=AUTH)
    assert response.status == status
    assert await response.json() == {"error": {"code": code, "message": message}}
    for name, value in HEADERS.get(kind, {}).items():
        assert response.headers[name] == value


async def test_an_unknown_exception_is_the_documented_500(client):
    response = await client.get("/api/test-refusal/crash", headers=AUTH)
    assert response.status == 500
    assert await response.json() == {
        "error": {"code": "internal_error", "message": "internal server error"}
    }


def test_every_kind_of_the_app_is_in_the_table():
    """A new kind is added to the table above, with the answer it documents (ApiError is the
    handlers' own, tested with every handler)."""
    from app.api.errors import ApiError

    assert refused_kinds() - {ApiError, RefusedKind} == {type(case[0]) for case in KINDS.values()}


def test_there_is_one_conflict():
    """The runtime's stored state that moved on is `StateMoved`, not a second `Conflict`."""
    modules = parse_tree(ROOT, ("app",))
    defining = [
        module.name
        for module in modules.values()
        for node in ast.walk(module.tree)
        if isinstance(node, ast.ClassDef) and node.name == "Conflict"
    ]
    assert defining == ["app.storage.errors"]
    assert issubclass(Missing, LookupError)  # rooms that look a thing up still catch it
