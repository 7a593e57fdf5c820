"""The web UI in a real browser: Debian's chromium driven by Playwright (its sync API).

Every test gets
- `fake`: a real fake model server (`tests/fakemodel.py`) on a free port, in a thread of
  its own (these tests are synchronous; the fake is asyncio);
- `nova`: the real app (`python -m app --headless …`) as a subprocess on a free port with
  its own data dir and embedded Redis, its model pointed at `fake`; `start_nova(...)`
  starts one with other settings (the offline model, headless users, env);
- `open_chat(nova)`: a new browser context (fresh cookies and storage) holding a session
  cookie of `local` (what the desktop start link gives) and waits until the WebSocket is
  connected.

One chromium runs for the whole session; Playwright gives it a fresh temporary profile.
Screenshots go to `tests/artifacts/` (ignored by git). An uncaught exception in a page fails
the test. Run with `make test-browser` (it installs chromium and the `browser` extra).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("playwright") is None:
    # `make test` without the browser extra: nothing here is collected (not "skipped").
    collect_ignore_glob = ["test_*.py"]
else:
    from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

    from tests.browser.helpers import (
        CHROMIUM,
        CHROMIUM_ARGS,
        DESKTOP,
        TOKEN,
        Nova,
        ThreadedFake,
        signed_in_page,
        wait_connected,
    )
    from tests.fakemodel import PURPOSE_SETTING
    from tests.procs import clean_env

    @pytest.fixture
    def fake() -> Iterator[ThreadedFake]:
        threaded = ThreadedFake()
        try:
            yield threaded
        finally:
            threaded.close()

    @pytest.fixture
    def start_nova(tmp_path: Path, fake: ThreadedFake) -> Iterator[Callable[..., Nova]]:
        """`start_nova(offline=False, users={name: password}, config=None, **env)` → a
        started app, its model the fake (or the offline model; or `config` as config.toml)."""
        started: list[Nova] = []

        def start(*, offline: bool = False, users: dict[str, str] | None = None,
                  config: dict[str, Any] | None = None, **env: str) -> Nova:
            data_dir = tmp_path / f"data{len(started)}"
            data_dir.mkdir()
            # The model goes into config.toml, where the settings panel saves its choice
            # (a NOVABERG_LLM_* variable would fix it: the panel may not change it then).
            model = {"llm_provider": "offline"} if offline else fake.config()
            if config is not None:
                model = config
            # An app that starts without the fake may switch to it in the settings panel.
            model = {**PURPOSE_SETTING, **model}
            (data_dir / "config.toml").write_text(
                "".join(f"{k} = {json.dumps(v)}\n" for k, v in model.items()))
            nova = Nova(data_dir, token=TOKEN, env=clean_env(**env))
            for name, password in (users or {}).items():
                nova.add_user(name, password)
            started.append(nova.start())
            return nova

        try:
            yield start
        finally:
            for nova in started:
                nova.stop()

    @pytest.fixture
    def nova(start_nova: Callable[..., Nova]) -> Nova:
        return start_nova()

    @pytest.fixture(scope="session")
    def browser() -> Iterator[Browser]:
        if not Path(CHROMIUM).exists():
            pytest.fail(f"{CHROMIUM} is missing: `make test-browser` installs it")
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                yield chromium
            finally:
                chromium.close()

    @pytest.fixture
    def page_errors() -> Iterator[list[str]]:
        """Uncaught exceptions of the pages a test opened: the test fails on any."""
        errors: list[str] = []
        yield errors
        assert not errors, "errors in the page:\n" + "\n".join(errors)

    @pytest.fixture
    def new_context(browser: Browser,
                    page_errors: list[str]) -> Iterator[Callable[..., BrowserContext]]:
        """`new_context(locale="en-US", color_scheme="light", viewport=DESKTOP)`."""
        contexts: list[BrowserContext] = []

        def make(*, locale: str = "en-US", color_scheme: str = "light",
                 viewport: dict[str, int] | None = None) -> BrowserContext:
            context = browser.new_context(locale=locale, color_scheme=color_scheme,  # type: ignore[arg-type]
                                          viewport=viewport or DESKTOP)
            context.on("page", lambda page: page.on(
                "pageerror", lambda error: errors_append(page, error)))
            # The tests' window into the page (web/js/main.js exposes `window.novaberg`
            # only under this flag).
            context.add_init_script("window.NOVABERG_TEST = true;")
            contexts.append(context)
            return context

        def errors_append(page: Page, error: Any) -> None:
            page_errors.append(f"{page.url}: {error}")

        try:
            yield make
        finally:
            for context in contexts:
                context.close()

    @pytest.fixture
    def open_chat(new_context: Callable[..., BrowserContext]) -> Callable[..., Page]:
        """`open_chat(nova, context=None, **context_options)` → a connected chat page."""

        def open_(nova: Nova, context: BrowserContext | None = None, **options: Any) -> Page:
            page = signed_in_page(context or new_context(**options), nova)
            wait_connected(page)
            return page

        return open_

    @pytest.fixture
    def open_profile(new_context: Callable[..., BrowserContext]) -> Callable[..., Page]:
        """`open_profile(nova, **context_options)` → the writing profile page, ready."""

        def open_(nova: Nova, **options: Any) -> Page:
            page = signed_in_page(new_context(**options), nova, "/profile")
            expect(page.locator("body")).to_have_attribute("data-ready", "true")
            return page

        return open_
