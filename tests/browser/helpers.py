"""Helpers of the browser tests: the fake model in a thread, the app subprocess, page actions.

Imported only when Playwright is installed (see `conftest.py`).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.fakemodel import FakeModel
from tests.procs import ROOT, AppProcess, http

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = ROOT / "tests" / "artifacts"
TOKEN = "browser-token-0123456789"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
CONTEXT = 32768

expect.set_options(timeout=15_000)


class ThreadedFake:
    """A `FakeModel` served from its own event loop in a background thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fake-model",
                                       daemon=True)
        self.thread.start()
        # A roomy window: the long-text tests must not hit the prompt budget.
        self.fake = FakeModel(context_length=CONTEXT)
        self.run(self.fake.start())

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` in the fake's loop thread (its state is not thread-safe)."""
        done: Future[Any] = Future()

        def _run() -> None:
            try:
                done.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                done.set_exception(exc)

        self.loop.call_soon_threadsafe(_run)
        return done.result(timeout=10)

    @property
    def url(self) -> str:
        return self.fake.url

    def script(self, purpose: str, *steps: Any) -> None:
        self.call(self.fake.script, purpose, *steps)

    def always(self, purpose: str, step: Any) -> None:
        self.call(self.fake.always, purpose, step)

    def chats(self, purpose: str | None = None) -> list[Any]:
        return self.call(self.fake.chats, purpose)

    def config(self) -> dict[str, Any]:
        """The app's settings pointing its model at this fake (`FakeModel.overrides`)."""
        return self.fake.overrides(llm_context=CONTEXT)

    def close(self) -> None:
        self.run(self.fake.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


class Nova(AppProcess):
    """The app subprocess, with what tests ask of it besides the browser."""

    def add_user(self, name: str, password: str) -> None:
        """`novaberg user add NAME --password-stdin`, before the app starts."""
        subprocess.run([sys.executable, "-m", "app", "--data-dir", str(self.data_dir), "user",
                        "add", name, "--password-stdin"], input=password + "\n", text=True,
                       cwd=ROOT, env=self.env, check=True, capture_output=True, timeout=60)

    def api(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        return http(method, self.url + path, token=self.token, body=body)

    def redis_set(self, key: str, value: str, seconds: int) -> None:
        """Write one key into the app's own Redis (keys from the product's key builder)."""
        import redis

        client = redis.Redis(unix_socket_path=str(self.data_dir / "redis" / "redis.sock"))
        try:
            client.set(key, value, ex=seconds)
        finally:
            client.close()

    def session_cookie(self) -> dict[str, Any]:
        """A browser session of `local`, as the desktop start link makes one. These apps run
        headless (where start links do not exist), so the session is written into the app's
        Redis by the product's own key builder, under the id's hash as a login stores it."""
        import secrets

        from app.api.middleware import SESSION_COOKIE
        from app.auth.accounts import token_hash
        from app.auth.credentials import SESSION_TTL_SECONDS
        from app.memory import keys

        session_id = secrets.token_urlsafe(32)
        self.redis_set(keys.auth_session(token_hash(session_id)), "local", SESSION_TTL_SECONDS)
        return {"name": SESSION_COOKIE, "value": session_id, "url": self.url,
                "httpOnly": True, "sameSite": "Strict"}

    def block_login(self, name: str, seconds: int = 60) -> None:
        """The login backoff for `name` from this browser's address, as failed logins leave
        it (app.auth.credentials `LoginThrottle`): each login of that name from here answers
        429 `login_backoff` meanwhile."""
        from app.auth.credentials import LoginThrottle
        from app.memory import keys

        kind, who = LoginThrottle.subjects(name, "127.0.0.1")[0]
        self.redis_set(keys.login_blocked(kind, who), "5", seconds)


def signed_in_page(context: BrowserContext, nova: Nova, path: str = "") -> Page:
    """A new page of `context`, holding a session cookie of `local`, at `path` of `nova`."""
    context.add_cookies([nova.session_cookie()])  # type: ignore[list-item]
    page = context.new_page()
    page.goto(nova.url + path)
    return page


def wait_connected(page: Page) -> None:
    expect(page.locator("#connection")).to_have_attribute("data-state", "online")


def wait_model_status(page: Page) -> None:
    """Until the page has shown the model's status (the offline banner, the message limit:
    web/js/main.js `showOffline`). Given as a function: Playwright polls an expression
    string with `eval`, which the app's CSP forbids — an EvalError as soon as the first look
    finds it not yet there."""
    page.wait_for_function(
        "() => window.novaberg && window.novaberg.app.messageLimit !== undefined")


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), animations="disabled")
    return path


def send(page: Page, text: str) -> None:
    """Type into the message box and press Enter, as a person does."""
    box = page.locator("#composer-input")
    box.fill(text)
    box.press("Enter")


def user_bubbles(page: Page) -> Locator:
    return page.locator("#message-list .msg-user")


def character_bubbles(page: Page) -> Locator:
    return page.locator("#message-list .msg-character")


def failure_notices(page: Page) -> Locator:
    return page.locator("#message-list .msg-failure")
