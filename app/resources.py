"""Where the static UI folder `web/` is: in a source tree, an installed wheel or the one-file
binary.

Never relative to the working directory, and never a place we write to: a frozen binary's
bundle (`sys._MEIPASS`) is read-only for us; user files go to the data dir. Data files
inside our packages (prompt templates, built-in characters) are read with
`importlib.resources` where they are used (`app.templates`, `app.pipeline.characters`).
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
