"""Searches in bounds (app/api/searches.py, issue 38 item 7): one user's searches cannot fill
the lane another user's history page is read on; a user has at most two searches running and
four waiting (the next is 429 in the error shape, nothing run); a substring scan past its
budget of rows is refused (422), never read to the end. The real app, SQLite and the
database's own threads: the search lane is held shut by real work on it (a read waiting on an
event), not by a stand-in."""

from __future__ import annotations

import asyncio
import threading

from app.api.app_keys import DB, SEARCHES
from app.api.searches import SEARCHES_PER_USER, SEARCHES_WAITING_PER_USER
from app.auth.accounts import add_user_sync
from app.storage.database import SEARCH_THREADS
from app.wiring.server import create_app
from tests.api.test_history import BASE, SEARCH, log_rows
from tests.conftest import AUTH, TOKEN
from tests.waiting import until


async def hold_the_search_lane(db, gate: threading.Event) -> list[asyncio.Future]:
    """Every thread of the search lane busy until `gate` opens."""
    started = threading.Barrier(SEARCH_THREADS + 1)

    def wait(conn) -> None:
        started.wait(5)
        gate.wait(30)

    held = [asyncio.ensure_future(db.execute_search_fn(wait)) for _ in range(SEARCH_THREADS)]
    await asyncio.to_thread(started.wait, 5)
    return held


async def test_one_users_searches_never_delay_another_users_history(aiohttp_client, settings):
    app = create_app(settings, local_token=TOKEN)
    client = await aiohttp_client(app)
    anna = await app[DB].execute_write_fn(lambda c: add_user_sync(c, "anna", "password123"))
    await log_rows(client, [f"Zeile {n}" for n in range(40)])
    await log_rows(client, ["Annas Zeile", "Antwort"], user="anna")
    gate = threading.Event()
    held = await hold_the_search_lane(app[DB], gate)
    try:
        admitted = SEARCHES_PER_USER + SEARCHES_WAITING_PER_USER
        searches = [
            asyncio.ensure_future(client.get(SEARCH, params={"q": "ze"}, headers=AUTH))
            for _ in range(admitted)
        ]
        await until(lambda: app[SEARCHES].admitted("local"), lambda n: n == admitted)
        assert not any(s.done() for s in searches)  # running (on the held lane) or waiting
        refused = await client.get(SEARCH, params={"q": "ze"}, headers=AUTH)
        assert refused.status == 429 and refused.headers["Retry-After"] == "1"
        assert (await refused.json())["error"]["code"] == "too_many_searches"

        # Another user's history page, and this user's own, are read while every search waits.
        page = await client.get(BASE, headers={"Authorization": f"Bearer {anna}"})
        assert page.status == 200
        assert [m["text"] for m in (await page.json())["messages"]] == ["Annas Zeile", "Antwort"]
        own = await client.get(BASE, params={"limit": 5}, headers=AUTH)
        assert own.status == 200 and len((await own.json())["messages"]) == 5
        # Another user may search too: the limit is each user's own.
        other = asyncio.ensure_future(
            client.get(SEARCH, params={"q": "an"}, headers={"Authorization": f"Bearer {anna}"})
        )
        await until(lambda: app[SEARCHES].admitted("anna"), lambda n: n == 1)
        assert not other.done() and not any(s.done() for s in searches)
    finally:
        gate.set()
        await asyncio.gather(*held)
    answers = await asyncio.gather(*searches)
    assert [a.status for a in answers] == [200] * admitted
    for answer in answers:
        assert len((await answer.json())["hits"]) == 20
    assert [h["text"] for h in (await (await other).json())["hits"]] == ["Antwort", "Annas Zeile"]


async def test_a_substring_scan_past_its_budget_is_refused(aiohttp_client, make_settings):
    client = await aiohttp_client(
        create_app(make_settings(llm_provider="offline", search_scan_rows=30), local_token=TOKEN)
    )
    await log_rows(client, [f"Zeile {n}" for n in range(30)])
    found = await client.get(SEARCH, params={"q": "29"}, headers=AUTH)
    assert found.status == 200
    assert [h["text"] for h in (await found.json())["hits"]] == ["Zeile 29"]
    await log_rows(client, ["Zeile 30"], start=1_800_000_000.0)
    refused = await client.get(SEARCH, params={"q": "29"}, headers=AUTH)
    assert refused.status == 422
    error = (await refused.json())["error"]
    assert error["code"] == "search_too_broad" and "search_scan_rows" in error["message"]
    # A text the index looks up reads no rows beyond its hits: the budget does not apply.
    indexed = await client.get(SEARCH, params={"q": "Zeile 30"}, headers=AUTH)
    assert indexed.status == 200 and (await indexed.json())["hits"][0]["text"] == "Zeile 30"
