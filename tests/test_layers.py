"""The house has one direction (STYLE.md, issue 10): api → runtime → pipeline/journal/backup →
characters/interaction → memory/llm → storage, with no arrow back up and no package cycle.
Each layer is imported alone, in a fresh interpreter, and must not have loaded a module of a
higher layer."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Higher number = higher layer. Of two layers of one rank only the named direction is
# allowed (the summary in memory calls the model gateway; backup reads the journal's tables to
# export them), so there is no package cycle. The interaction profile sits below the pipeline,
# whose responder reads its hint, and below the journal, whose writing profile composes the
# export of both profiles; the journal sits beside the pipeline, which never loads it.
RANK = {"core": 0, "storage": 1, "llm": 2, "memory": 2, "characters": 3, "interaction": 3,
        "journal": 4, "pipeline": 4, "impulses": 4, "backup": 4, "pixie": 5, "runtime": 5,
        "auth": 5, "api": 6, "wiring": 7}
SIBLING_USES = {("memory", "llm"), ("backup", "journal")}
# The wiring above every layer: only `app.wiring.server` (and the entry points around it) builds
# and connects services.
WIRING = ("app.wiring", "app.wiring.server", "app.wiring.purposes", "app.wiring.cli",
          "app.__main__")

PROBE = """
import importlib, json, pkgutil, sys
import app.{layer} as package
for info in pkgutil.walk_packages(package.__path__, "app.{layer}."):
    importlib.import_module(info.name)
print(json.dumps(sorted(name for name in sys.modules if name.startswith("app."))))
"""


def loaded_by(layer: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(layer=layer)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


@pytest.mark.parametrize("layer", sorted(RANK, key=RANK.__getitem__))
def test_a_layer_imports_no_higher_one(layer: str) -> None:
    loaded = loaded_by(layer)
    above = [m for m in loaded
             if (other := layer_of(m)) is not None and other != layer
             and RANK[other] >= RANK[layer] and (layer, other) not in SIBLING_USES]
    wiring = [m for m in loaded if m in WIRING and layer != "wiring"]
    assert not above, f"app.{layer} loads higher or sibling layers: {above}"
    assert not wiring, f"app.{layer} loads the wiring: {wiring}"


# The app object's keys (`app.api.app_keys`) are read by the wiring and the API only: the layers
# below get what they use handed in.
@pytest.mark.parametrize("layer", sorted((name for name in RANK if RANK[name] < RANK["api"]),
                                         key=RANK.__getitem__))
def test_no_layer_below_the_api_reads_the_app_keys(layer: str) -> None:
    assert "app.api.app_keys" not in loaded_by(layer)


def test_the_app_keys_import_no_layer() -> None:
    probe = "import json, sys, app.api.app_keys; " \
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('app.'))))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    loaded = json.loads(done.stdout)
    assert "app.core.settings" in loaded
    assert [m for m in loaded if layer_of(m) not in (None, "core", "api") or m in WIRING] == []
    assert [m for m in loaded if m.startswith("app.api.") and m != "app.api.app_keys"] == []


_REACHES_THE_WIRING = re.compile(
    r"^\s*(from ({0}) import|import ({0})\b)".format("|".join(re.escape(m) for m in WIRING)),
    re.MULTILINE)


def test_no_module_reaches_up_to_the_wiring_not_even_late() -> None:
    """An import inside a function escapes the probes above; the source does not."""
    reaching = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if module in WIRING:
            continue
        if _REACHES_THE_WIRING.search(path.read_text(encoding="utf-8")):
            reaching.append(module)
    assert reaching == []


def test_statemachine_imports_nothing_of_app() -> None:
    probe = "import json, sys, statemachine; " \
            "print(json.dumps([m for m in sys.modules if m.startswith('app')]))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


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
