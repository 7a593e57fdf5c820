"""The browser side of a desktop start: open the chat in a browser, and a second start.

- `open_browser(url)`: the user's browser on `url` (Python's `webbrowser`, which honours the
  `BROWSER` variable); False when none could be opened — the caller then prints the URL to
  open by hand.
- `open_running(settings)`: a second start of the binary while an app already holds the
  data dir. Instead of failing on the lock (exit 2, in a window that closes at once), it
  finds the running app through the data dir's instance file (`app.storage.datadir`, mode
  0600, the pid checked against the lock's holder), asks it for a new single-use start link
  with the app's launch secret (`POST /api/launch-link`, on 127.0.0.1 only), opens the
  browser on it (or, without a browser or with `--no-browser`, prints it), prints one line
  and reports True: the command then exits 0. A holder that is no desktop app (a headless
  server, a `restore`) or that does not answer leaves False: the start goes on and fails on
  the lock as before.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import urllib.error
import urllib.request
import webbrowser
from urllib.parse import urlsplit

from app.api.middleware import LAUNCH_LINK_PATH
from app.core.settings import Settings
from app.storage.datadir import Instance, lock_holder, running_instance

log = logging.getLogger(__name__)

# A starting app holds the lock some moments before it serves and writes its instance file.
INSTANCE_WAIT_SECONDS = 10.0
INSTANCE_POLL_SECONDS = 0.1
LAUNCH_TIMEOUT_SECONDS = 5.0
# Some browser commands return only when the browser closes: a second start does not wait
# longer than this to learn whether one could be started.
BROWSER_WAIT_SECONDS = 5.0


def open_browser(url: str) -> bool:
    """Open `url` in the user's browser; False when no browser could be started."""
    try:
        return bool(webbrowser.open(url))
    except webbrowser.Error:
        return False


# What a start prints, one builder each (README.md "Start" and docs/deploy.md quote them).
def start_lines(start_url: str, token: str) -> str:
    """A desktop start's two lines: the link that opens the chat, the token for scripts."""
    return (
        f"Novaberg is running: {start_url}\n"
        f"API token for scripts (Authorization: Bearer …): {token}\n"
    )


def no_browser_line(url: str) -> str:
    return f"No browser could be opened: open {url} in one.\n"


def opened_tab_line(url: str) -> str:
    """A second start that opened a tab on the app running at `url`."""
    return f"Novaberg is already running at {url}: opened a new tab there.\n"


def open_browser_or_say(url: str) -> None:
    """`open_browser`, and when it fails one line on stderr with the URL to open."""
    if not open_browser(url):
        sys.stderr.write(no_browser_line(url))
        sys.stderr.flush()


def wait_for_instance(
    settings: Settings, timeout: float = INSTANCE_WAIT_SECONDS
) -> Instance | None:
    """The running app on the data dir; None when no process holds it, or when the holder
    does not say within `timeout` that it is a serving app (a command, an app that is stuck
    starting)."""
    deadline = time.monotonic() + timeout
    while True:
        if lock_holder(settings.data_path) is None:
            return None
        instance = running_instance(settings.data_path)
        if instance is not None or time.monotonic() >= deadline:
            return instance
        time.sleep(INSTANCE_POLL_SECONDS)


def ask_start_link(instance: Instance) -> str | None:
    """A new single-use start link (the full URL) from the running desktop app, or None
    when it does not give one."""
    base = instance.url.rstrip("/")
    if urlsplit(base).hostname != "127.0.0.1" or instance.launch_secret is None:
        return None
    request = urllib.request.Request(  # noqa: S310 - http to 127.0.0.1, checked above
        base + LAUNCH_LINK_PATH,
        method="POST",
        headers={"Authorization": f"Bearer {instance.launch_secret}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=LAUNCH_TIMEOUT_SECONDS) as response:  # noqa: S310 - the request above
            path = json.loads(response.read())["url"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning(
            "the running app gave no start link", extra={"fields": {"url": base, "error": str(exc)}}
        )
        return None
    return base + path if isinstance(path, str) and path.startswith("/?token=") else None


def _open_within(url: str, seconds: float) -> bool:
    """`open_browser(url)`, but a browser command still running after `seconds` counts as
    opened (it is the browser itself)."""
    result: list[bool] = []
    thread = threading.Thread(
        target=lambda: result.append(open_browser(url)), daemon=True, name="open-browser"
    )
    thread.start()
    thread.join(seconds)
    return result[0] if result else True


def open_running(settings: Settings) -> bool:
    """A second desktop start on a data dir an app holds: see the module."""
    instance = wait_for_instance(settings)
    if instance is None or instance.mode != "desktop":
        return False
    link = ask_start_link(instance)
    if link is None:
        return False
    if settings.no_browser:
        line = f"Novaberg is already running: {link}\n"
    elif _open_within(link, BROWSER_WAIT_SECONDS):
        line = opened_tab_line(instance.url)
    else:
        line = f"Novaberg is already running at {instance.url}. " + no_browser_line(link)
    sys.stderr.write(line)
    sys.stderr.flush()
    return True
