"""Prompt templates: shipped as package data, each replaceable from the data dir.

A template `<relative>` of a package is read from `<data dir>/prompts/<relative>` when that
file exists, else from the package's own `prompts/<relative>`. Shipped files are read once;
an override is re-read when its modification time changes, so a user can edit a prompt
while the app runs. Every prompt of the product is read through `read_template`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from app.core.settings import Settings

PROMPTS_DIR = "prompts"

_shipped: dict[tuple[str, str], str] = {}
_overrides: dict[Path, tuple[float, str]] = {}


def read_template(settings: Settings, package: str, relative: str) -> str:
    override = _read_override(Path(settings.data_dir) / PROMPTS_DIR / relative)
    if override is not None:
        return override
    key = (package, relative)
    if key not in _shipped:
        _shipped[key] = (
            resources.files(package).joinpath(PROMPTS_DIR, relative).read_text(encoding="utf-8")
        )
    return _shipped[key]


def _read_override(path: Path) -> str | None:
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None
    cached = _overrides.get(path)
    if cached is None or cached[0] != mtime:
        cached = (mtime, path.read_text(encoding="utf-8"))
        _overrides[path] = cached
    return cached[1]
