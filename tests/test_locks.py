"""The locks in requirements/ (what every install goes through, Makefile): each of
pyproject.toml's requirements is pinned in the lock of its group, at a version its range
admits, and every pin carries hashes, so `pip --require-hashes` takes nothing unpinned."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# Which lock holds which of pyproject's groups (the Makefile's `lock` target).
LOCK_OF_GROUP = {"test": "test", "dev": "test", "postgres": "postgres", "browser": "browser",
                 "build": "build", "peer": "peer"}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)")


def pins(lock: str) -> dict[str, list[tuple[Version, str]]]:
    """Each package of `lock` with its pinned versions (one per marker branch) and the text of
    its entry (the pin line and its hash lines)."""
    found: dict[str, list[tuple[Version, str]]] = {}
    entries = re.split(r"\n(?=[A-Za-z0-9])", (ROOT / "requirements" / f"{lock}.txt").read_text())
    for entry in entries:
        if match := PIN.match(entry):
            name = canonicalize_name(match[1])
            found.setdefault(name, []).append((Version(match[2]), entry))
    return found


def groups() -> list[tuple[str, str]]:
    """(group, requirement) for the program's own requirements and every extra's."""
    listed = [("app", text) for text in PROJECT["dependencies"]]
    for extra, texts in PROJECT["optional-dependencies"].items():
        listed += [(extra, text) for text in texts]
    return listed


@pytest.mark.parametrize(("group", "text"), groups())
def test_each_requirement_is_pinned_in_its_lock_within_its_range(group: str, text: str) -> None:
    requirement = Requirement(text)
    lock = LOCK_OF_GROUP.get(group, "app")
    locked = pins(lock)
    name = canonicalize_name(requirement.name)
    assert name in locked, f"{requirement.name} is not in requirements/{lock}.txt: make lock"
    for version, _ in locked[name]:
        assert requirement.specifier.contains(version, prereleases=True), (
            f"requirements/{lock}.txt pins {name}=={version} outside {requirement.specifier}")


@pytest.mark.parametrize("lock", sorted({"app", *LOCK_OF_GROUP.values()}))
def test_every_pin_of_a_lock_carries_its_hashes(lock: str) -> None:
    locked = pins(lock)
    assert len(locked) > 10
    for name, versions in locked.items():
        for version, entry in versions:
            assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), f"{name}=={version} has no hash"


def test_the_groups_on_top_of_test_keep_its_pins() -> None:
    """A slow suite installs its lock over the test lock: a different pin there would change
    what `make test` had installed."""
    base = pins("test")
    for lock in ("postgres", "browser", "build", "peer"):
        for name, versions in pins(lock).items():
            if name in base:
                assert [v for v, _ in versions] == [v for v, _ in base[name]], (lock, name)
