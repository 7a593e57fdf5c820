"""The web UI's DOM-free modules under node's built-in test runner (tests/js/), so that
`make test` covers them without a browser: the conversation's bookkeeping (conversation.js),
the one fetch and its error text (api.js, i18n.js) and the string tables (German and
English alike). `make test` installs Debian's `nodejs` when `node` is missing."""

from __future__ import annotations

import shutil
import subprocess

from tests import ROOT


def test_the_ui_modules_under_node() -> None:
    node = shutil.which("node") or shutil.which("nodejs")
    assert node is not None, "node is missing: `make test` installs Debian's nodejs"
    done = subprocess.run([node, "--test", "tests/js/"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout
