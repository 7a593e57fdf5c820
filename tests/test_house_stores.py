"""Every store and service is built once, in the wiring (issue 37 item 3), read from the
source of app/ (tests/house_support.py), with small sources that prove the rule catches what
it should and passes what it should.

A store class is a class defined in app/ whose name ends in one of `STORE_SUFFIXES` (`JournalStore`,
`ProfileService`, `SessionMemory`, `IdentityRegistry`, `ListStores`, …), but the ones named
in `NOT_STORES`. Only `app/wiring/` constructs one (the server's `stores_ctx` and
`app/wiring/stores.py`, the command line in `app/wiring/cli.py`); everything else gets the one
object handed in. `BUILT_ELSEWHERE` names, with their reasons, the few constructions below the
wiring that are built that way by design.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.house_support import ROOT, Module, bindings, calls, parse_tree, resolve

WIRING = "app.wiring"
STORE_SUFFIXES = ("Store", "Stores", "Service", "Memory", "Registry")
_STORE_NAME = re.compile(rf"\w(?:{'|'.join(STORE_SUFFIXES)})$")

# Classes whose names end like a store's and hold no store, each with why.
NOT_STORES = {
    # a record of the memories' export file (msgspec), read and written as data
    "ExportedMemory": "app.backup.memory_export",
    # a protocol the offline handlers type their argument with; never constructed
    "DayMemory": "app.llm.offline.handlers",
}

# (module, class) constructed below the wiring by design, each with why.
BUILT_ELSEWHERE = {
    # `ListStores.of()` hands out one pair's view of its lists (it remembers what it read for
    # its next conditional write): the wiring builds the `ListStores`, the view is per use.
    ("app.memory.lists", "ListStore"): "a pair's view, handed out by ListStores.of()",
    # The conversation export and import work on the Redis their caller hands them: the
    # server's, or one the backup command line opened on a stopped data dir (`on_redis`).
    ("app.backup.chat_export", "ListStore"): "works on the Redis the caller hands it",
    ("app.backup.chat_export", "ReminderStore"): "works on the Redis the caller hands it",
    # The `characters` command line runs without the server, on the data dir's definitions.
    ("app.characters.cli", "CharacterStore"): "the characters command line, no server",
}


def store_classes(modules: dict[str, Module]) -> dict[str, str]:
    """Every store class of app/: its name → the module that defines it."""
    found = {}
    for module in modules.values():
        if not module.name.startswith("app."):
            continue
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.ClassDef)
                and _STORE_NAME.search(node.name)
                and NOT_STORES.get(node.name) != module.name
            ):
                found[node.name] = module.name
    return found


def constructions(module: Module, stores: dict[str, str]) -> Iterator[tuple[str, int]]:
    """The store classes `module` constructs, with their lines: by a name it imported
    (aliased or not, `module.Class(...)` too) or by a class it defines itself."""
    bound = bindings(module)
    for _, call in calls(module):
        name = resolve(bound, call.func)
        if name is not None:
            if name.startswith("app.") and name.rsplit(".", 1)[-1] in stores:
                yield name.rsplit(".", 1)[-1], call.lineno
        elif isinstance(call.func, ast.Name) and stores.get(call.func.id) == module.name:
            yield call.func.id, call.lineno


def breaches(modules: dict[str, Module], stores: dict[str, str]) -> list[str]:
    return [
        f"{module.relative}:{line} constructs {name}"
        for module in modules.values()
        if module.name.startswith("app.") and not _in_wiring(module.name)
        for name, line in constructions(module, stores)
        if (module.name, name) not in BUILT_ELSEWHERE
    ]


def _in_wiring(name: str) -> bool:
    return name == WIRING or name.startswith(WIRING + ".")


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return parse_tree(ROOT)


@pytest.fixture(scope="module")
def stores(modules: dict[str, Module]) -> dict[str, str]:
    return store_classes(modules)


def module_of(text: str, name: str = "app.somewhere.thing") -> Module:
    source = textwrap.dedent(text)
    return Module(name, Path(*name.split(".")).with_suffix(".py"), False, ast.parse(source))


def test_the_store_classes_are_found(stores: dict[str, str]) -> None:
    """The rule is only as good as the set it reads: the stores issue 37 names are in it."""
    assert {
        "JournalStore",
        "MediaStore",
        "ProfileService",
        "ProfileStore",
        "ReminderStore",
        "SessionMemory",
        "ShortTermMemory",
        "LongTermMemory",
        "InteractionStore",
        "ListStore",
        "ListStores",
        "IdentityRegistry",
        "BackupService",
        "CharacterStore",
    } <= set(stores)
    assert not set(NOT_STORES) & set(stores)


def test_stores_are_built_only_in_the_wiring(
    modules: dict[str, Module], stores: dict[str, str]
) -> None:
    assert breaches(modules, stores) == []


def test_the_named_exceptions_still_exist(
    modules: dict[str, Module], stores: dict[str, str]
) -> None:
    """An exception that no longer matches code is dropped from the table."""
    present = {
        (module.name, name)
        for module in modules.values()
        for name, _ in constructions(module, stores)
    }
    assert sorted(set(BUILT_ELSEWHERE) - present) == []
    defined = {
        node.name: module.name
        for module in modules.values()
        for node in ast.walk(module.tree)
        if isinstance(node, ast.ClassDef)
    }
    assert {name: defined.get(name) for name in NOT_STORES} == NOT_STORES


PLANTED = {
    "imported": """
        from app.journal.store import JournalStore

        def handler(request):
            return JournalStore(request.app[DB])
    """,
    "aliased": """
        from app.memory.reminders import ReminderStore as Reminders

        async def handler(request):
            return await Reminders(request.app[REDIS]).list("local", "nova")
    """,
    "through its module": """
        from app.memory import session

        def memory(redis, settings):
            return session.SessionMemory(redis, settings)
    """,
    "a re-exported name": """
        import app.llm.privacy

        def registry(db):
            return app.llm.privacy.IdentityRegistry(db)
    """,
    "late, in a method": """
        class Jobs:
            async def brief(self, user_id):
                from app.profiles.writing.service import ProfileService
                return await ProfileService(self.db, self.settings).journal_brief(user_id)
    """,
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_a_store_built_outside_the_wiring_is_caught(case: str, stores: dict[str, str]) -> None:
    module = module_of(PLANTED[case], "app.api.planted")
    found = breaches({module.name: module}, stores)
    assert len(found) == 1 and found[0].startswith("app/api/planted.py:"), found


def test_a_class_defined_beside_its_constructor_is_caught(stores: dict[str, str]) -> None:
    """A store built by the module that defines it (its name not imported) counts too."""
    module = module_of(
        """
        class NoteStore:
            def __init__(self, db):
                self.db = db

        def notes(db):
            return NoteStore(db)
    """,
        "app.notes.store",
    )
    found = breaches({module.name: module}, stores | store_classes({module.name: module}))
    assert found == ["app/notes/store.py:7 constructs NoteStore"]


def test_the_wiring_may_build_and_others_may_use(stores: dict[str, str]) -> None:
    """The same construction in the wiring is no breach; a handler reading the app key, a
    type annotation and a name that only ends alike (a `Storefront`) are none either."""
    wiring = module_of(PLANTED["imported"], "app.wiring.server")
    user = module_of(
        """
        from app.api.app_keys import JOURNAL_STORE
        from app.journal.store import JournalStore
        from app.shop import Storefront

        def store(request) -> JournalStore:
            Storefront()
            return request.app[JOURNAL_STORE]
    """,
        "app.api.journal",
    )
    assert breaches({wiring.name: wiring, user.name: user}, stores) == []
