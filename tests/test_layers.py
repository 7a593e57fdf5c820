"""The house has one direction (STYLE.md, docs/architecture.md): each room of app/ imports
only rooms below it, with no arrow back up and no cycle between rooms.

Read from the source, not from what an import happens to load: every module of app/ and
statemachine/ is parsed (tests/house_support.py) and every import counts — at the top, inside
a function, under `if TYPE_CHECKING:`, relative, `import a.b as c`, `from a import b` where b
is a module. The fake trees below prove that each of those forms is caught.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import deque
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.house_support import ROOT, Edge, Module, import_graph, parse_tree

# The room of a module is the folder under app/ (statemachine/ is a room of its own); higher
# number = higher room. A new room is one line here. Of two rooms of one rank only the
# direction named in SIBLING_USES is allowed (the summary in memory calls the model gateway;
# backup reads the journal's tables to export them). The profiles sit below the pipeline,
# whose responder reads the interaction hint, and below the journal, whose stage 2 reads the
# writing profile's brief; the journal sits beside the pipeline, which never loads it.
RANK = {
    "face": -1,          # app/__init__.py: the package face (its version), below everything
    "statemachine": -1,  # statemachine/: lifecycles as data, imports nothing of app/
    "core": 0,
    "storage": 1,
    "llm": 2,
    "memory": 2,
    "characters": 3,
    "profiles": 3,
    "journal": 4,
    "pipeline": 4,
    "impulses": 4,
    "backup": 4,
    "consolidation": 5,
    "runtime": 5,
    "auth": 5,
    "api": 6,
    "wiring": 7,
    "entry": 8,          # app/__main__.py: the entry point
}
SIBLING_USES = {("memory", "llm"), ("backup", "journal")}
# The two modules of app/ outside a room folder.
LOOSE = {"app": "face", "app.__main__": "entry"}
# Only the wiring builds and connects services; above it only the entry point starts it.
WIRING = "app.wiring"
ABOVE_THE_WIRING = {"wiring", "entry"}
# The app object's keys are read by the wiring and the API only: the rooms below get what
# they use handed in.
APP_KEYS = "app.api.app_keys"
APP_KEY_READERS = {"api", "wiring"}


def room_of(module: str) -> str:
    if module in LOOSE:
        return LOOSE[module]
    parts = module.split(".")
    return parts[1] if parts[0] == "app" else parts[0]


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def violations(modules: dict[str, Module], edges: Iterable[Edge],
               rank: dict[str, int] = RANK,
               sibling_uses: set[tuple[str, str]] = SIBLING_USES) -> list[str]:
    """Every breach of the house's direction, one line each (empty: the house holds)."""
    found = [f"{name} is in room {room_of(name)!r}, which has no rank in RANK"
             for name in modules if room_of(name) not in rank]
    between_rooms: dict[str, set[str]] = {}
    for edge in edges:
        source, target = room_of(edge.source), room_of(edge.target)
        if within(edge.target, WIRING) and source not in ABOVE_THE_WIRING:
            found.append(f"{edge}: only the entry point reaches up to the wiring")
        if within(edge.target, APP_KEYS) and source not in APP_KEY_READERS:
            found.append(f"{edge}: the app keys are read by the API and the wiring only")
        if source == "statemachine" and target != "statemachine":
            found.append(f"{edge}: statemachine/ imports nothing of app/")
        if source == target or source not in rank:
            continue
        if target not in rank:
            found.append(f"{edge}: room {target!r} has no rank in RANK")
            continue
        between_rooms.setdefault(source, set()).add(target)
        if rank[target] > rank[source]:
            found.append(f"{edge}: {source} (rank {rank[source]}) reaches up to {target} "
                         f"(rank {rank[target]})")
        elif rank[target] == rank[source] and (source, target) not in sibling_uses:
            found.append(f"{edge}: {source} uses its sibling {target} (rank {rank[source]}), "
                         "which SIBLING_USES does not allow")
    found += [f"rooms in a cycle: {' → '.join(cycle)}" for cycle in cycles(between_rooms)]
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each group of rooms that reach one another."""
    def reachable(start: str) -> set[str]:
        seen, todo = set(), list(graph.get(start, ()))
        while todo:
            room = todo.pop()
            if room not in seen:
                seen.add(room)
                todo += graph.get(room, ())
        return seen

    reach = {room: reachable(room) for room in graph}
    found: list[list[str]] = []
    grouped: set[str] = set()
    for room in sorted(graph):
        if room in reach[room] and room not in grouped:
            group = {other for other in reach[room] if room in reach.get(other, ())}
            grouped |= group
            found.append(_way_back(graph, room, group))
    return found


def _way_back(graph: dict[str, set[str]], start: str, group: set[str]) -> list[str]:
    """The shortest way from `start` back to itself inside `group`: [start, …, start]."""
    came_from: dict[str, str] = {}
    todo = deque([start])
    while todo:
        room = todo.popleft()
        for step in sorted(graph.get(room, set()) & group):
            if step == start:
                way = [room]
                while way[-1] != start:
                    way.append(came_from[way[-1]])
                return [*reversed(way), start]
            if step not in came_from:
                came_from[step] = room
                todo.append(step)
    raise AssertionError(f"{start} does not reach itself in {group}")


# --- the product -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return parse_tree(ROOT)


@pytest.fixture(scope="module")
def graph(modules: dict[str, Module]) -> list[Edge]:
    return import_graph(modules)


def test_the_house_holds(modules: dict[str, Module], graph: list[Edge]) -> None:
    assert violations(modules, graph) == []


def test_the_graph_reads_every_module_and_every_kind_of_import(
        modules: dict[str, Module], graph: list[Edge]) -> None:
    assert len(modules) == len([*(ROOT / "app").rglob("*.py"),
                                *(ROOT / "statemachine").rglob("*.py")])
    kinds = {edge.kind for edge in graph}
    assert kinds == {"top", "late", "typing"}


def test_every_ranked_room_exists(modules: dict[str, Module]) -> None:
    """A room that moved or went keeps no stale line in RANK."""
    present = {room_of(name) for name in modules}
    assert sorted(set(RANK) - present) == []


def test_the_app_keys_load_no_room_at_run_time(modules: dict[str, Module],
                                               graph: list[Edge]) -> None:
    """Importing the keys runs the settings and nothing of a room: the other rooms are named
    for type checkers only, and no handler module comes along."""
    at_run_time: dict[str, set[str]] = {}
    for edge in graph:
        if edge.kind == "top":
            at_run_time.setdefault(edge.source, set()).add(edge.target)
    loaded, todo = set(), [APP_KEYS]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for module in (".".join(parts[:n]) for n in range(1, len(parts) + 1)):
            if module not in loaded and module in modules:  # a package runs before its modules
                loaded.add(module)
                todo += at_run_time.get(module, ())
    assert "app.core.settings" in loaded
    assert sorted(m for m in loaded if room_of(m) not in ("face", "core", "api")) == []
    assert sorted(m for m in loaded if room_of(m) == "api") == ["app.api", APP_KEYS]


def test_importing_the_product_registers_nothing() -> None:
    """There is no process-wide table of offline answers to register into: the provider's own
    answers and the product's (`app.wiring.purposes.OFFLINE_ANSWERS`) are immutable values,
    composed explicitly, and building an app changes neither."""
    probe = """
import importlib, json, pkgutil, types
import app
for info in pkgutil.walk_packages(app.__path__, "app."):
    if info.name != "app.__main__":
        importlib.import_module(info.name)
from app.llm.offline import handlers
from app.wiring.purposes import OFFLINE_ANSWERS
from app.wiring.server import create_app
from app.core.settings import defaults
tables = {"base": handlers.BASE_ANSWERS, "product": OFFLINE_ANSWERS}
before = {name: dict(table) for name, table in tables.items()}
create_app(defaults(llm_provider="offline"))
print(json.dumps({
    "registers": [n for n in ("HANDLERS", "register") if hasattr(handlers, n)],
    "immutable": all(isinstance(t, types.MappingProxyType) for t in tables.values()),
    "unchanged": all(dict(t) == before[n] for n, t in tables.items()),
    "base": sorted(handlers.BASE_ANSWERS), "product": sorted(OFFLINE_ANSWERS)}))
"""
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
    found = json.loads(done.stdout)
    assert found["registers"] == [] and found["immutable"] and found["unchanged"]
    assert found["base"] == ["perception", "responder", "summary"]
    assert {"perception", "router", "thinker", "consolidation", "journal_reconstruct",
            "profile_review"} <= set(found["product"])


# --- the rules catch what they should: small fake trees --------------------------------------

HUB = "class Hub:\n    pass\n"
BASE = {
    "app/__init__.py": '__version__ = "0"\n',
    "app/__main__.py": "from app.wiring.cli import main\n",
    "app/core/__init__.py": "",
    "app/llm/__init__.py": "",
    "app/llm/gateway.py": "",
    "app/memory/__init__.py": "",
    "app/memory/keys.py": "",
    "app/runtime/__init__.py": "",
    "app/runtime/hub.py": HUB,
    "app/api/__init__.py": "",
    "app/api/app_keys.py": "",
    "app/wiring/__init__.py": "",
    "app/wiring/cli.py": "from app.wiring.server import run\n",
    "app/wiring/server.py": "from app.api.app_keys import HUB\nfrom app.runtime.hub import Hub\n",
    "statemachine/__init__.py": "",
    "statemachine/turn.py": "",
}


def fake_tree(root: Path, files: dict[str, str]) -> dict[str, Module]:
    for relative, text in {**BASE, **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return parse_tree(root)


def breaches(root: Path, files: dict[str, str], **rules: object) -> list[str]:
    modules = fake_tree(root, files)
    return violations(modules, import_graph(modules), **rules)  # type: ignore[arg-type]


def test_the_fake_base_tree_holds(tmp_path: Path) -> None:
    assert breaches(tmp_path, {}) == []


# Each form of an upward import memory → runtime, written into app/memory/keys.py.
UPWARD = {
    "top": "from app.runtime.hub import Hub\n",
    "late": """\
        def later():
            from app.runtime.hub import Hub
            return Hub
        """,
    "late in a method": """\
        class Keys:
            async def later(self):
                import app.runtime.hub
        """,
    "TYPE_CHECKING": """\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from app.runtime.hub import Hub
        """,
    "typing.TYPE_CHECKING": """\
        import typing

        if typing.TYPE_CHECKING:
            from app.runtime import hub
        """,
    "relative": "from ..runtime.hub import Hub\n",
    "relative, a module": "from ..runtime import hub\n",
    "import as": "import app.runtime.hub as h\n",
    "from a package, a module": "from app import runtime\n",
    "from a room, a module": "from app.runtime import hub\n",
    "import_module": """\
        import importlib

        def later():
            return importlib.import_module("app.runtime.hub")
        """,
}
UPWARD = {form: textwrap.dedent(text) for form, text in UPWARD.items()}


@pytest.mark.parametrize("form", sorted(UPWARD))
def test_an_upward_import_is_caught_in_every_form(tmp_path: Path, form: str) -> None:
    found = breaches(tmp_path, {"app/memory/keys.py": UPWARD[form]})
    assert found, form
    assert all(line.startswith("app.memory.keys:") and "reaches up to runtime" in line
               for line in found), found


@pytest.mark.parametrize("form", sorted(UPWARD))
def test_the_same_import_downward_is_fine(tmp_path: Path, form: str) -> None:
    """The runtime may use memory: each form turned around is no breach (the rule is precise,
    not a grep)."""
    text = UPWARD[form]
    for upward, downward in (("runtime.hub", "memory.keys"), ("runtime", "memory"),
                             ("import hub", "import keys"), ("Hub", "KEYS")):
        text = text.replace(upward, downward)
    assert breaches(tmp_path, {"app/runtime/hub.py": HUB + text}) == []


def test_an_import_from_inside_a_room_is_resolved_against_the_room(tmp_path: Path) -> None:
    """`from . import x` in a package's __init__ is the package itself, not its parent."""
    assert breaches(tmp_path, {"app/memory/__init__.py": "from . import keys\n"}) == []
    [found] = breaches(tmp_path, {"app/runtime/__init__.py": "", "app/memory/__init__.py":
                                  "from .. import runtime\n"})
    assert found.startswith("app.memory:1 imports app.runtime")


def test_a_sibling_is_allowed_only_in_the_named_direction(tmp_path: Path) -> None:
    assert breaches(tmp_path, {"app/memory/keys.py": "from app.llm import gateway\n"}) == []
    found = breaches(tmp_path, {"app/llm/gateway.py": "from app.memory import keys\n"})
    assert found == [f"app.llm.gateway:1 imports {target}: llm uses its sibling memory (rank 2), "
                     "which SIBLING_USES does not allow"
                     for target in ("app.memory", "app.memory.keys")]


def test_rooms_in_a_cycle_are_caught(tmp_path: Path) -> None:
    found = breaches(tmp_path, {"app/llm/gateway.py": "from app.memory import keys\n",
                                "app/memory/keys.py": "from app.llm import gateway\n"},
                     sibling_uses={("memory", "llm"), ("llm", "memory")})
    assert found == ["rooms in a cycle: llm → memory → llm"]


def test_a_module_in_a_room_without_a_rank_fails(tmp_path: Path) -> None:
    files = {"app/profile/__init__.py": "", "app/profile/store.py": "",
             "app/runtime/hub.py": HUB + "from app.profile import store\n"}
    found = breaches(tmp_path, files)
    assert found == [
        "app.profile is in room 'profile', which has no rank in RANK",
        "app.profile.store is in room 'profile', which has no rank in RANK",
        "app.runtime.hub:3 imports app.profile: room 'profile' has no rank in RANK",
        "app.runtime.hub:3 imports app.profile.store: room 'profile' has no rank in RANK",
    ]
    # …and with its one line in the table the same tree holds.
    assert breaches(tmp_path, files, rank={**RANK, "profile": 3}) == []


def test_a_loose_module_in_app_fails(tmp_path: Path) -> None:
    """Only the package face and the entry point lie loose in app/: a module beside them (the
    old `app/tasks.py`) has no room, so no rank, and fails until it moves into one."""
    found = breaches(tmp_path, {"app/tasks.py": "import asyncio\n"})
    assert found == ["app.tasks is in room 'tasks', which has no rank in RANK"]


def test_no_room_reaches_the_wiring_but_the_entry_point(tmp_path: Path) -> None:
    found = breaches(tmp_path, {"app/api/app_keys.py": """\
        def later():
            from app.wiring import server
        """})
    assert "app.api.app_keys:2 imports app.wiring.server (inside a function): only the entry " \
           "point reaches up to the wiring" in found
    assert "rooms in a cycle: api → wiring → api" in found  # the wiring reads the keys
    assert breaches(tmp_path, {"app/__main__.py": "def later():\n"
                                                  "    from app.wiring import cli\n"}) == []


def test_the_app_keys_are_read_by_the_api_and_the_wiring_only(tmp_path: Path) -> None:
    assert breaches(tmp_path, {"app/api/__init__.py": "from app.api import app_keys\n"}) == []
    found = breaches(tmp_path, {"app/runtime/hub.py": HUB + textwrap.dedent("""\
        def later():
            from app.api.app_keys import HUB
        """)})
    assert "app.runtime.hub:4 imports app.api.app_keys (inside a function): the app keys are " \
           "read by the API and the wiring only" in found


def test_statemachine_imports_nothing_of_app(tmp_path: Path) -> None:
    found = breaches(tmp_path, {"statemachine/turn.py": "from app.core import settings\n",
                                "app/core/settings.py": ""})
    assert "statemachine.turn:1 imports app.core.settings: statemachine/ imports nothing of " \
           "app/" in found
    # Even the package face, beside it at the bottom, is out of its reach.
    found = breaches(tmp_path, {"statemachine/turn.py": "from app import __version__\n"})
    assert found == ["statemachine.turn:1 imports app: statemachine/ imports nothing of app/",
                     "statemachine.turn:1 imports app: statemachine uses its sibling face "
                     "(rank -1), which SIBLING_USES does not allow"]
