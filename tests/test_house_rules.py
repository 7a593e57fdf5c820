"""What the house promises (STYLE.md "The house", docs/architecture.md), read from the source
of app/ and statemachine/ (tests/house_support.py), each rule with small sources that prove it
catches what it should and passes what it should:

- only `app/memory/keys.py` spells a Redis key;
- handlers (`app/api/`) never build prompts and never call a model with messages;
- one SQLite writer: only `app/storage/database.py` opens a connection that may write to the
  data dir's database (the command line writes through it too, holding the data dir's lock);
- and of the tests themselves: a test waits on what can be seen (`tests/waiting.py`, the fake
  model's `wait_requests`), never for a fixed time, but where a table below says why.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.house_support import (
    ROOT,
    Module,
    bindings,
    calls,
    dotted_name,
    names_used,
    parse_module,
    parse_tree,
    resolve,
    strings,
)

KEYS_MODULE = "app.memory.keys"
KEYS = parse_module(ROOT, ROOT / "app" / "memory" / "keys.py")


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return parse_tree(ROOT)


def module_of(text: str, name: str = "app.somewhere.thing") -> Module:
    """A module of the product as written in a test (its room from `name`)."""
    source = textwrap.dedent(text)
    return Module(name, Path(*name.split(".")).with_suffix(".py"), False, ast.parse(source))


# --- only app/memory/keys.py spells a Redis key ----------------------------------------------

def key_namespaces(keys: Module) -> tuple[set[str], set[str]]:
    """What the key builder's keys begin with: the namespaces before the first ":"
    ("session", "turn_laeuft", …) and the keys that are one word ("heartbeats")."""
    namespaces, words = set(), set()
    for function in keys.tree.body:
        if not isinstance(function, ast.FunctionDef):
            continue
        for node in ast.walk(function):
            value = node.value if isinstance(node, ast.Return) else None
            if isinstance(value, ast.JoinedStr) and value.values:
                value = value.values[0]  # a key made of an f-string: its literal head
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                head, colon, _ = value.value.partition(":")
                (namespaces if colon else words).add(head)
    return namespaces, words


def key_pattern(keys: Module) -> re.Pattern[str]:
    """A string is a key when it starts with a namespace and its colon (followed by more of the
    key, not by a space: "novaberg: error" is a message), or is a one-word key."""
    namespaces, words = key_namespaces(keys)
    shapes = [rf"{re.escape(namespace)}:(?!\s)" for namespace in sorted(namespaces)]
    shapes += [rf"{re.escape(word)}$" for word in sorted(words)]
    return re.compile(f"^(?:{'|'.join(shapes)})")


def spelled_keys(module: Module, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    return [(line, text) for text, line in strings(module.tree) if pattern.match(text)]


# Strings outside the key builder that begin like a key and are none, each with why.
NOT_KEYS = {
    # The writing profile names its sources "message:<id>" (and "entry:<id>") in SQLite and in
    # its analysis package: references to a message, which share the prefix of the Redis key
    # `keys.message_record` by chance. Matched by the path's end (app/profiles/writing/…).
    ("writing/corpus.py", "message:"),
    ("writing/package.py", "message:"),
}


def not_a_key(module: Module, text: str) -> bool:
    return any(module.relative.endswith(path) and text.startswith(prefix)
               for path, prefix in NOT_KEYS)


def test_the_key_builder_knows_the_seeds_key_layout() -> None:
    """The rule below is only as good as the namespaces read from the key builder."""
    namespaces, words = key_namespaces(KEYS)
    assert {"session", "nova_state", "haltung", "prompt_queue", "event_queue", "turn_laeuft",
            "turn", "message", "auth_session", "heartbeat", "kzg", "pixie_queue",
            "reminders"} <= namespaces
    assert "run_slots" in namespaces and words == {"heartbeats"}


def test_only_the_key_builder_spells_a_redis_key(modules: dict[str, Module]) -> None:
    """Backup and restore walk the database (`scan_iter`) and ask `keys.transient`; the
    snapshot's format example lives in its docstring, which is documentation: no exception is
    needed there."""
    pattern = key_pattern(KEYS)
    spelled = [f"{module.relative}:{line} {text!r}" for module in modules.values()
               if module.name != KEYS_MODULE
               for line, text in spelled_keys(module, pattern) if not not_a_key(module, text)]
    assert spelled == []


def test_the_strings_named_as_no_keys_still_exist(modules: dict[str, Module]) -> None:
    """An exception that no longer matches code is dropped from the table."""
    pattern = key_pattern(KEYS)
    present = {(path, prefix) for module in modules.values()
               for _, text in spelled_keys(module, pattern)
               for path, prefix in NOT_KEYS
               if module.relative.endswith(path) and text.startswith(prefix)}
    assert sorted(NOT_KEYS - present) == []


@pytest.mark.parametrize("namespace", sorted(key_namespaces(KEYS)[0]))
def test_a_key_of_every_namespace_is_caught_however_it_is_written(namespace: str) -> None:
    pattern = key_pattern(KEYS)
    module = module_of(f'''
        """Docstrings may show a key: {namespace}:local:nova."""
        PREFIX = "{namespace}:"
        PATTERN = b"{namespace}:*"

        def key(user_id, character_id):
            return f"{namespace}:{{user_id}}:{{character_id}}"

        def glued(user_id):
            return "{namespace}:" + user_id

        def fine(exc):
            log(f"{namespace}: {{exc}}", "{namespace}", "the {namespace}:x inside")
        ''')
    assert [line for line, _ in spelled_keys(module, pattern)] == [3, 4, 7, 10]


def test_one_word_keys_are_caught_only_whole() -> None:
    pattern = key_pattern(KEYS)
    module = module_of('LIVE = "heartbeats"\nGAUGE = "heartbeats_seen"\n')
    assert spelled_keys(module, pattern) == [(1, "heartbeats")]


# --- handlers never build prompts ------------------------------------------------------------

API = "app.api"
MESSAGE_TYPES = {"app.llm.Message", "app.llm.types.Message"}
TEMPLATES = "app.core.prompt_templates"
_MESSAGE = re.compile(r"\bMessage\b")


def _mentions_message(annotation: ast.expr | None) -> bool:
    return annotation is not None and bool(_MESSAGE.search(ast.unparse(annotation)))


def _makes_prompts(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A public function that makes model messages without taking any (a prompt builder, not
    a masker): its return type names `Message`, or it writes a role/content message; or one
    that reads a prompt template."""
    if function.name.startswith("_"):
        return False  # a room's own step: nothing a handler can reach
    arguments = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    takes = any(_mentions_message(argument.annotation) for argument in arguments)
    builds = not takes and (_mentions_message(function.returns) or any(
        _is_model_message(node) for node in ast.walk(function)))
    reads = any(isinstance(node, ast.Call) and dotted_name(node.func) in (
        "read_template", "prompt_templates.read_template") for node in ast.walk(function))
    return builds or reads


def _is_model_message(node: ast.AST) -> bool:
    return isinstance(node, ast.Dict) and {"role", "content"} <= {
        key.value for key in node.keys if isinstance(key, ast.Constant)}


def prompt_makers(modules: dict[str, Module]) -> dict[str, str]:
    """Every prompt builder of the product (a public function, or a class with such a
    method), and the module texts they put into prompts, by qualified name → what it is. A
    text a builder imports counts where it is written and where the builder's module has it
    (`DEFAULT_BRIEF`, written beside the writing profile, read by the journal's stage 2)."""
    found: dict[str, str] = {}
    written = {module.name: {target.id for node in module.tree.body
                             if isinstance(node, ast.Assign)
                             and isinstance(node.value, (ast.Constant, ast.JoinedStr))
                             for target in node.targets if isinstance(target, ast.Name)}
               for module in modules.values()}
    for module in modules.values():
        texts, bound = written[module.name], bindings(module)
        for node in module.tree.body:
            functions = ([node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                         else [f for f in node.body if isinstance(
                             f, (ast.FunctionDef, ast.AsyncFunctionDef))]
                         if isinstance(node, ast.ClassDef) else [])
            making = [f for f in functions if _makes_prompts(f)]
            if not making or node.name.startswith("_"):
                continue
            found[f"{module.name}.{node.name}"] = "a prompt builder"
            for function in making:
                for name in ast.walk(function):
                    if not isinstance(name, ast.Name):
                        continue
                    origin, _, text = bound.get(name.id, "").rpartition(".")
                    if name.id in texts or text in written.get(origin, ()):
                        found[f"{module.name}.{name.id}"] = "a prompt text"
                    if text in written.get(origin, ()):
                        found[bound[name.id]] = "a prompt text"
    return found


def prompt_breaches(module: Module, makers: dict[str, str], model_calls: set[str]) -> list[str]:
    found = []
    for name, line in sorted(set(names_used(module)), key=lambda pair: pair[1]):
        if name in makers:
            found.append(f"{module.relative}:{line} uses {name} ({makers[name]})")
        elif name in MESSAGE_TYPES:
            found.append(f"{module.relative}:{line} uses {name} (the model's message type)")
        elif name == TEMPLATES or name.startswith(TEMPLATES + "."):
            found.append(f"{module.relative}:{line} uses {name} (the prompt templates)")
    for node in ast.walk(module.tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in model_calls):
            found.append(f"{module.relative}:{node.lineno} calls .{node.func.attr}() (a model "
                         "call with messages)")
        if _is_model_message(node):
            found.append(f"{module.relative}:{node.lineno} builds a model message")
    return found


def model_calls(modules: dict[str, Module]) -> set[str]:
    """The gateway's methods that take messages (`complete`, `stream`)."""
    [gateway] = [node for node in modules["app.llm.gateway"].tree.body
                 if isinstance(node, ast.ClassDef) and node.name == "Gateway"]
    return {f.name for f in gateway.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not f.name.startswith("_") and "messages" in [a.arg for a in f.args.args]}


Prompts = tuple[dict[str, str], set[str]]


@pytest.fixture(scope="module")
def prompts(modules: dict[str, Module]) -> Prompts:
    return prompt_makers(modules), model_calls(modules)


def test_the_prompt_makers_and_model_calls_are_found(prompts: Prompts) -> None:
    makers, calls = prompts
    assert {"app.journal.stages.narrate_prompt", "app.journal.stages.DEFAULT_BRIEF",
            "app.profiles.writing.brief.DEFAULT_BRIEF",
            "app.journal.stages.RECONSTRUCT_SYSTEM", "app.pipeline.prompts.PromptLibrary",
            "app.profiles.writing.review.review_messages", "app.memory.summary.load_template",
            "app.memory.summary.summary_messages",
            "app.runtime.minimal.responder_messages"} <= set(makers)
    assert "app.llm.privacy.masking.Masker" not in makers  # it masks messages, builds none
    # The jobs build their prompts in a step of their own: the service is no builder.
    assert "app.journal.jobs.JournalJobs" not in makers
    assert calls == {"complete", "stream"}


def test_handlers_never_build_prompts(modules: dict[str, Module], prompts: Prompts) -> None:
    makers, calls = prompts
    found = [line for module in modules.values()
             if module.name == API or module.name.startswith(API + ".")
             for line in prompt_breaches(module, makers, calls)]
    assert found == []


HANDLER_BREACHES = {
    "a builder": ("from app.journal.stages import narrate_prompt\n", "a prompt builder"),
    "a prompt text": ("from app.journal import stages\n\n"
                      "def brief():\n    return stages.DEFAULT_BRIEF\n", "a prompt text"),
    "a builder class": ("import app.pipeline.prompts as p\n\n"
                        "def get(s):\n    return p.PromptLibrary(s)\n", "a prompt builder"),
    "the templates": ("from app.core.prompt_templates import read_template\n",
                      "the prompt templates"),
    "the message type": ("from app.llm import Message\n", "the model's message type"),
    "a message": ('def ask():\n    return [{"role": "user", "content": "hi"}]\n',
                  "builds a model message"),
    "a model call": ("async def ask(request, gateway):\n"
                     "    return await gateway.complete('x', await request.json())\n",
                     "a model call with messages"),
}


@pytest.mark.parametrize("case", sorted(HANDLER_BREACHES))
def test_a_handler_building_a_prompt_is_caught(case: str, prompts: Prompts) -> None:
    text, why = HANDLER_BREACHES[case]
    found = prompt_breaches(module_of(text, "app.api.thing"), *prompts)
    assert found and all(why in line for line in found), found


def test_a_handler_may_call_what_builds_the_prompt_below_it(prompts: Prompts) -> None:
    """The review handler hands the gateway to the profile's review, which builds the prompt
    and calls the model: that is calling, not building."""
    module = module_of("""\
        from app.profiles.writing import review

        async def ai_review(request, gateway):
            return await review.run_review(request["profiles"], gateway, "u", "review")
        """, "app.api.thing")
    assert prompt_breaches(module, *prompts) == []


# --- one writer (SQLite's file or PostgreSQL's connection) -----------------------------------------------------------------------

WRITER = "app.storage.database"
CONNECTS = {"sqlite3.connect", "app.storage.database.connect",
            "app.storage.database.connect_postgres"}
# Where a connection that may write is opened beside the writer, each with why. These are
# file-level steps of backup and restore; none runs beside the app's writer on its database.
OTHER_WRITERS = {
    ("app.backup.database", "copy_database"):
        "the online backup API's source (it reads only) and the new copy, a file of its own",
    ("app.backup.database", "carry_accounts"):
        "the database a restore has just put in place, under the restore's data dir lock",
    ("app.backup.restore", "_fold_wal"):
        "folds the WAL into the file before the safety folder links it, under the restore's "
        "lock",
    ("app.backup.restore", "_fill_safety"):
        "an empty database of the safety folder's own when the data dir's is damaged, under "
        "the restore's lock",
    ("app.backup.cli", "_locked_database"):
        "`novaberg import` and `import-diary` hold the data dir's lock (refused while an app "
        "runs)",
    ("app.backup.database", "dump_store"):
        "PostgreSQL's rows read in one REPEATABLE READ transaction (nothing written there) "
        "into the backup's new SQLite file, a file of its own",
    ("app.backup.database", "load_store"):
        "the restore's own copy of the backup's file, and PostgreSQL's rows replaced in one "
        "transaction under the restore's data dir lock (the restore refuses while an app "
        "of this data dir runs)",
}


def writable_connections(module: Module) -> Iterator[tuple[str, int]]:
    """(the enclosing function, line) of each SQLite connection opened that may write: not
    `mode=ro` in its URI and not `readonly=True`."""
    bound = bindings(module)
    return ((function, call.lineno) for function, call in calls(module, outermost=True)
            if resolve(bound, call.func) in CONNECTS and not _read_only(call))


def _read_only(call: ast.Call) -> bool:
    if any(k.arg == "readonly" and isinstance(k.value, ast.Constant) and k.value.value is True
           for k in call.keywords):
        return True
    return bool(call.args) and any("mode=ro" in text for text, _ in strings(call.args[0]))


Connections = list[tuple[Module, str, int]]


@pytest.fixture(scope="module")
def connections(modules: dict[str, Module]) -> Connections:
    return [(module, function, line) for module in modules.values()
            for function, line in writable_connections(module)]


def test_only_the_writer_opens_a_connection_that_writes(connections: Connections) -> None:
    found = [f"{module.relative}:{line} in {function}()"
             for module, function, line in connections
             if module.name != WRITER and (module.name, function) not in OTHER_WRITERS]
    assert found == []


def test_the_named_other_writers_still_exist(connections: Connections) -> None:
    """An exception that no longer matches code is dropped from the table."""
    present = {(module.name, function) for module, function, _ in connections}
    assert sorted(set(OTHER_WRITERS) - present) == []


def test_a_connection_that_writes_is_caught_however_it_is_opened() -> None:
    module = module_of("""\
        import sqlite3
        from sqlite3 import connect as open_db
        from app.storage import database
        from app.storage.database import connect

        def add(path):
            sqlite3.connect(path)
            open_db(path)
            database.connect(path)
            connect(path, readonly=False)

        def read(path):
            sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            connect(path, readonly=True)
            database.connect(path, readonly=True)
        """)
    assert list(writable_connections(module)) == [("add", 7), ("add", 8), ("add", 9),
                                                  ("add", 10)]


# --- tests wait on what can be seen, not for a fixed time ------------------------------------

SLEEPS = {"asyncio.sleep", "time.sleep"}
BROWSER_SLEEP = "wait_for_timeout"  # Playwright's fixed wait
WAITING = "tests.waiting"  # `until`: the one bounded poll
# Where the tests sleep for a fixed time beside it, each with why: none of these waits for
# something the app does.
FIXED_TIMES = {
    ("tests.procs", "wait_for"):
        "`until`'s counterpart for code outside an event loop (app processes, the browser)",
    ("tests.fakemodel", "_metadata_fault"): "the fake model's scripted latency, not a wait",
    ("tests.fakemodel", "_pause"): "the fake model's scripted latency between chunks",
    ("tests.fakemodel", "_fault"): "the fake model's scripted hang, ended when the client goes",
    ("tests.fakemodel", "_sleep_unless_gone"): "the fake model's scripted delay, in steps",
    ("tests.auth.test_login_and_hosts", "test_failed_logins_back_off_with_429_and_retry_after"):
        "the back-off is measured in real time: Retry-After must pass before a retry",
    ("tests.auth.test_login_and_hosts", "tick"):
        "a ticker that measures the event loop's gaps while passwords are hashed",
    ("tests.core.test_background", "test_a_wake_during_a_round_is_not_lost_and_many_wakes_are_one"):
        "a quiet time in which no further round may start",
    ("tests.core.test_background", "test_the_interval_can_follow_the_steps_result"):
        "a quiet time in which no further round may start",
    ("tests.core.test_background", "test_it_does_not_spin"):
        "counts the rounds of a fixed time: a loop that spins would run many",
    ("tests.runtime.test_slots", "test_waiting_runs_are_woken_by_the_release_not_by_polling"):
        "counts the slot scripts Redis runs in a fixed wait: a poller would run many",
    ("tests.browser.test_panel_editing",
     "test_list_items_are_crossed_off_with_undo_edited_and_lists_renamed"):
        "the undo time runs out: a removal undone must not be sent when it does",
    ("tests.browser.test_history", "scroll_to_top_until_the_beginning"):
        "a scroll step: the page loads the next older page on the scroll event",
    ("tests.browser.test_history",
     "test_a_search_hit_opens_its_day_and_the_way_back_to_the_present"):
        "a scroll step: the page loads the next newer page on the scroll event",
    ("tests.browser.test_history", "test_history_and_live_lines_meet_without_doubles"):
        "a quiet time in which no line may be drawn twice",
    ("tests.browser.test_history", "test_the_first_screen_greets_and_offers_three_phrases"):
        "a quiet time in which a filled-in phrase must not be sent",
}


def fixed_sleeps(module: Module) -> Iterator[tuple[str, int]]:
    """(the innermost enclosing function, line) of each sleep for a fixed time: `asyncio.sleep`
    or `time.sleep` however imported, or a browser's `wait_for_timeout`; `sleep(0)` only lets
    the event loop run other tasks and is none."""
    bound = bindings(module)
    return ((function, call.lineno) for function, call in calls(module)
            if (resolve(bound, call.func) in SLEEPS or (isinstance(call.func, ast.Attribute)
                                                        and call.func.attr == BROWSER_SLEEP))
            and not _no_time(call))


def _no_time(call: ast.Call) -> bool:
    return bool(call.args) and isinstance(call.args[0], ast.Constant) and call.args[0].value == 0


Sleeps = list[tuple[Module, str, int]]


@pytest.fixture(scope="module")
def sleeps() -> Sleeps:
    return [(module, function, line) for module in parse_tree(ROOT, ("tests",)).values()
            for function, line in fixed_sleeps(module)]


def test_tests_wait_on_what_can_be_seen(sleeps: Sleeps) -> None:
    """A wait for something the app does is `until(...)` (tests/waiting.py) or the fake
    model's `wait_requests`: bounded, and over as soon as it is seen."""
    found = [f"{module.relative}:{line} in {function}()" for module, function, line in sleeps
             if module.name != WAITING and (module.name, function) not in FIXED_TIMES]
    assert found == []


def test_the_named_fixed_times_still_exist(sleeps: Sleeps) -> None:
    """An exception that no longer matches code is dropped from the table."""
    present = {(module.name, function) for module, function, _ in sleeps}
    assert sorted(set(FIXED_TIMES) - present) == []


def test_a_fixed_sleep_is_caught_however_it_is_written() -> None:
    module = module_of("""\
        import asyncio
        import time
        from asyncio import sleep
        from time import sleep as pause

        async def test_waits(page, seconds):
            await asyncio.sleep(0.5)
            time.sleep(seconds)
            await sleep(1)
            pause(0.1)
            page.wait_for_timeout(300)
            while not done():
                await asyncio.sleep(0.02)

        async def test_lets_the_loop_run():
            await asyncio.sleep(0)
            await until(lambda: seen, timeout=5)
        """, "tests.somewhere.test_thing")
    assert list(fixed_sleeps(module)) == [("test_waits", line) for line in (7, 8, 9, 10, 11, 13)]


# --- a long module says why it is one --------------------------------------------------------

LONG_MODULE = 400  # lines
REASON = re.compile(r"^(?:Why one module\b|One module:)", re.MULTILINE)


def long_without_reason(modules: dict[str, Module]) -> list[str]:
    """Every module of app/ over LONG_MODULE lines whose docstring gives no line that begins
    "One module:" (or "Why one module"): split it along its seams, or say why it is one."""
    found = []
    for module in modules.values():
        lines = module.path.read_text(encoding="utf-8").count("\n")
        if module.name.startswith("app") and lines > LONG_MODULE and not REASON.search(
                ast.get_docstring(module.tree) or ""):
            found.append(f"{module.relative}: {lines} lines and no reason to be one module")
    return found


def test_every_long_module_says_why_it_is_one(modules: dict[str, Module]) -> None:
    assert long_without_reason(modules) == []


def test_a_long_module_without_its_reason_is_caught(tmp_path: Path) -> None:
    body = "x = 1\n" * (LONG_MODULE + 1)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "long.py").write_text(f'"""A long one."""\n{body}')
    (tmp_path / "app" / "kept.py").write_text(f'"""A long one.\n\nOne module: a table."""\n{body}')
    assert long_without_reason(parse_tree(tmp_path)) == [
        f"app/long.py: {LONG_MODULE + 2} lines and no reason to be one module"]
