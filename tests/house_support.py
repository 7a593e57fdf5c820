"""The product's source as data, for the tests that hold the house (tests/test_layers.py,
tests/test_house_rules.py): every module of app/ and statemachine/ parsed once (or of other
packages: the rule on waiting reads tests/), and the imports between them read from the
syntax tree.

An import counts wherever it is written: at the top, inside a function (`late`), under
`if TYPE_CHECKING:` (`typing`), relative or absolute, `import a.b as c`, `from a import b`
where b is a module, and `importlib.import_module("a.b")` with a literal name.

    modules = parse_tree(ROOT)                     # {"app.memory.keys": Module, …}
    for edge in import_graph(modules): ...         # Edge(source, target, line, kind)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "statemachine")

Kind = Literal["top", "late", "typing"]


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module

    @property
    def relative(self) -> str:
        """The path as written in messages: "app/memory/keys.py"."""
        return "/".join(self.path.parts[-(self.name.count(".") + 1 + self.is_package):])


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    kind: Kind

    def __str__(self) -> str:
        where = {"top": "", "late": " (inside a function)", "typing": " (TYPE_CHECKING)"}
        return f"{self.source}:{self.line} imports {self.target}{where[self.kind]}"


def parse_tree(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Module]:
    """Every module under `root`'s packages. The trees are large (a quarter of a million
    objects for the product): a test module holds them in a module-scoped fixture, so that
    they are gone, and cost the garbage collector nothing, once its tests have run."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            module = parse_module(root, path)
            modules[module.name] = module
    return modules


def parse_module(root: Path, path: Path) -> Module:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return Module(".".join(parts), path, is_package,
                  ast.parse(path.read_text(encoding="utf-8"), str(path)))


def import_graph(modules: dict[str, Module]) -> list[Edge]:
    """Every import of a module of `modules`' packages, by any module of `modules`."""
    roots = {name.split(".")[0] for name in modules}
    return [Edge(module.name, target, line, kind)
            for module in modules.values()
            for target, line, kind in _Imports(module, set(modules)).collect()
            if target.split(".")[0] in roots]


class _Imports(ast.NodeVisitor):
    def __init__(self, module: Module, known: set[str]) -> None:
        self.module = module
        self.known = known
        self.depth = 0          # functions around the node
        self.typing = False     # inside `if TYPE_CHECKING:`
        self.found: list[tuple[str, int, Kind]] = []

    def collect(self) -> list[tuple[str, int, Kind]]:
        self.visit(self.module.tree)
        return self.found

    def _add(self, target: str, line: int) -> None:
        kind: Kind = "typing" if self.typing else "late" if self.depth else "top"
        self.found.append((target, line, kind))

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            outer, self.typing = self.typing, True
            for child in node.body:
                self.visit(child)
            self.typing = outer
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node)
        self._add(base, node.lineno)
        for alias in node.names:  # `from app import runtime` imports the module app.runtime
            if f"{base}.{alias.name}" in self.known:
                self._add(f"{base}.{alias.name}", node.lineno)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("import_module", "__import__") and node.args and isinstance(
                node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            self._add(node.args[0].value, node.lineno)
        self.generic_visit(node)

    def _absolute(self, node: ast.ImportFrom) -> str:
        return absolute(self.module, node)


def absolute(module: Module, node: ast.ImportFrom) -> str:
    """The module a `from … import` in `module` reads from, relative levels resolved."""
    if not node.level:
        return node.module or ""
    package = module.name.split(".")
    if not module.is_package:
        package.pop()
    if node.level > 1:
        package = package[:len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def bindings(module: Module) -> dict[str, str]:
    """What each imported name of a module stands for: `import a.b` binds "a" to "a",
    `import a.b as c` "c" to "a.b", `from a import b as c` "c" to "a.b" (anywhere in the
    module: late imports too)."""
    bound: dict[str, str] = {}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                head = alias.name.split(".")[0]
                bound[alias.asname or head] = alias.name if alias.asname else head
        elif isinstance(node, ast.ImportFrom):
            base = absolute(module, node)
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{base}.{alias.name}"
    return bound


def names_used(module: Module) -> Iterator[tuple[str, int]]:
    """The qualified names a module uses, with their lines: what it imports
    (`from app.journal import stages` → "app.journal.stages") and what it reads from an
    imported module (`stages.DEFAULT_BRIEF` → "app.journal.stages.DEFAULT_BRIEF")."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = absolute(module, node)
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno
    bound = bindings(module)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute):
            name = resolve(bound, node)
            if name is not None:
                yield name, node.lineno


def dotted_name(node: ast.expr) -> str | None:
    """"a.b.c" for the expression a.b.c, None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def resolve(bound: dict[str, str], node: ast.expr) -> str | None:
    """The qualified name an expression such as `sqlite3.connect` or `connect` stands for,
    through a module's `bindings` (None: not an imported name)."""
    dotted = dotted_name(node)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    if head not in bound:
        return None
    return f"{bound[head]}.{rest}" if rest else bound[head]


def calls(module: Module, *, outermost: bool = False) -> Iterator[tuple[str, ast.Call]]:
    """Every call a module makes, with the function it is written in: the innermost one, or
    with `outermost` the module-level function around it ("<module>" outside any)."""
    def visit(node: ast.AST, function: str) -> Iterator[tuple[str, ast.Call]]:
        for child in ast.iter_child_nodes(node):
            name = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and not (
                    outermost and function != "<module>"):
                name = child.name
            if isinstance(child, ast.Call):
                yield name, child
            yield from visit(child, name)

    yield from visit(module.tree, "<module>")


def strings(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Every string the code spells, with its line: constants (str or bytes) and f-strings,
    whose formatted parts read as "\\0". Docstrings are documentation, not code: left out."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    inside_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                       for part in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) not in inside_fstrings:
            yield "".join(part.value if isinstance(part, ast.Constant) else "\0"
                          for part in node.values), node.lineno
        elif (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
              and id(node) not in docstrings and id(node) not in inside_fstrings):
            value = node.value
            yield value if isinstance(value, str) else value.decode("latin-1"), node.lineno
