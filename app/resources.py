"""Where the bundled files are: from a source tree, an installed wheel or the one-file binary.

Never relative to the working directory, and never a place we write to: a frozen binary's
bundle (`sys._MEIPASS`) is read-only for us; user files go to the data dir.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def web_root() -> Path:
    """The static UI folder `web/`."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "web"
    spec = importlib.util.find_spec("web")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the web/ folder is missing from this installation")
    return Path(next(iter(spec.submodule_search_locations)))


def package_dir(package: str) -> Path:
    """The folder of one of our packages (`app.prompts`, …), for its data files."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {package} is missing from this installation")
    return Path(next(iter(spec.submodule_search_locations)))
