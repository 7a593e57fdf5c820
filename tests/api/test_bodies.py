"""Issue 24, item 8: no body makes any route answer 500.

Every route that may take a body (each POST, PUT and DELETE of the app's router, found there,
not listed by hand) gets hostile bodies — nesting 100 000 levels deep, numbers far beyond any
float, wrong types, invalid UTF-8, random bytes, a gzip body of deep nesting — and JSON values
hypothesis draws. Each answer is a 2xx, or a 4xx in the one error shape; never a 5xx.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from app.api.errors import error_middleware
from app.api.validation import read_json
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.own_loop import served_on_own_loop
from tests.store import live_connection

DEEP = 100_000
HOSTILE = [
    b"[" * DEEP + b"]" * DEEP,
    b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    b'{"text": ' + b"[" * DEEP + b"]" * DEEP + b"}",
    b'{"kind": "novaberg.chat", "format_version": 1, "messages": ' + b"[" * DEEP
    + b"]" * DEEP + b"}",
    b'{"kind": "kansho.profiles", "format_version": 1, "x": ' + b"[" * DEEP + b"]" * DEEP
    + b"}",
    b'{"kind": "kansho.profile_result", "format_version": 1, "changes": ' + b"[" * DEEP
    + b"]" * DEEP + b"}",
    b'{"text": 1e999999}',
    b'{"value": -1e400, "text": 1' + b"0" * 10_000 + b"}",
    b'{"due_at": 1' + b"0" * 400 + b', "text": "x"}',
    b'{"date": "2026-03-01", "messages": [{"role": "user", "text": "x", "at": 1e300}]}',
    b"\xff\xfe\xfd\x00",
    b'{"text": "\xed\xa0\x80"}',
    b'{"name": "a\x00b", "password": "\xc3\x28"}',
    b"", b"null", b"[]", b'"x"', b"0", b"{", b'{"text": "x"',
    b'{"text": "' + b"a" * (2 * 1024 * 1024) + b'"}',
]
FIELDS = st.sampled_from([
    "text", "name", "password", "value", "date", "messages", "role", "at", "key", "scope",
    "target", "locked", "governance", "change_ids", "mode", "version_id", "conversation_ids",
    "draft_id", "names", "people", "aliases", "provider", "url", "model", "remote", "due_at",
    "kind", "format_version", "entries", "memories", "writing", "interaction", "prefs",
    "core", "facets", "traits", "changes", "summary", "evidence_basis"])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(FIELDS, inner, max_size=4),
    max_leaves=12)
BODIES = VALUES.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=64)
SAMPLE = {"cid": "nova", "character_id": "nova", "date": "2026-03-01", "name": "reisen"}
# Routes that run a model on a body they accept (still fuzzed: a refused body runs
# nothing), and those that change the model in use: fewer random examples.
SLOW = re.compile(r"/api/(llm|profile/review|journal/days/.*/drafts)")
# Reads no body and takes a real backup of the data dir's own Redis each time
# (tests/backup/test_backup.py runs it with one).
NO_BODY = {("POST", "/api/backups")}


def route_paths(app: web.Application) -> Iterator[tuple[str, str]]:
    seen = set()
    for route in app.router.routes():
        if route.method not in ("POST", "PUT", "DELETE", "PATCH"):
            continue
        info = route.resource.get_info() if route.resource else {}
        path = info.get("path") or info.get("formatter")
        if path is None:
            continue
        path = re.sub(r"\{(\w+)(:[^}]*)?\}", lambda m: SAMPLE.get(m.group(1), "x1"), path)
        if (route.method, path) not in seen | NO_BODY:
            seen.add((route.method, path))
            yield route.method, path


def check_answer(status: int, content_type: str, text: str, where: str) -> None:
    assert status < 500, f"{where}: {status} {text[:300]}"
    if status >= 400:
        assert content_type == "application/json", f"{where}: {status} {content_type}"
        body = json.loads(text)
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, where


@pytest.fixture
def running(settings) -> Iterator[tuple[asyncio.AbstractEventLoop, TestClient]]:
    with served_on_own_loop(create_app(settings, local_token=TOKEN)) as served:
        yield served


def test_every_route_answers_every_body_without_a_5xx(running):
    loop, client = running
    routes = list(route_paths(client.server.app))
    assert ("POST", "/api/profile/results") in routes and ("POST", "/api/imports") in routes
    assert len(routes) > 30

    async def send(method: str, path: str, body: bytes, headers: dict[str, str]) -> None:
        response = await client.request(method, path, data=body, headers={**AUTH, **headers})
        check_answer(response.status, response.content_type, await response.text(),
                     f"{method} {path} {body[:60]!r}")

    for method, path in routes:
        for body in HOSTILE:
            loop.run_until_complete(send(method, path, body, {"Content-Type": "application/json"}))
        # The same deep nesting, gzipped (the body reader inflates it first).
        loop.run_until_complete(send(method, path, gzip.compress(HOSTILE[0]), {
            "Content-Type": "application/json", "Content-Encoding": "gzip"}))

        @hypothesis_settings(max_examples=8 if SLOW.match(path) else 25, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])
        @given(body=BODIES)
        def fuzz(body: bytes) -> None:
            loop.run_until_complete(send(method, path, body,
                                         {"Content-Type": "application/json"}))

        fuzz()


async def test_the_one_reader_refuses_untyped_nesting_beyond_its_depth(aiohttp_client):
    """`read_json` with `Any`: nesting beyond `json_input.MAX_DEPTH` is a 400 too, so that no
    handler walks a value deep enough to run out of stack."""
    async def echo(request: web.Request) -> web.Response:
        return web.json_response({"got": type(await read_json(request, Any)).__name__})

    app = web.Application(middlewares=[error_middleware])
    app.router.add_post("/echo", echo)
    probe = await aiohttp_client(app)
    for depth, status in ((64, 200), (65, 400), (DEEP, 400)):
        response = await probe.post("/echo", data=b"[" * depth + b"]" * depth)
        assert response.status == status, depth


PROFILE_TABLES = ("writing_profiles", "writing_profile_versions", "writing_profile_proposals",
                  "writing_profile_changes", "interaction_profiles")
DEEP_PROFILE_BODIES = {
    "bare list": b"[" * DEEP + b"]" * DEEP,
    "bare object": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "inside a profiles document": b'{"kind": "kansho.profiles", "format_version": 1, '
                                  b'"writing": ' + b"[" * DEEP + b"]" * DEEP + b"}",
    "inside a result": b'{"kind": "kansho.profile_result", "format_version": 1, "changes": '
                       + b"[" * DEEP + b"]" * DEEP + b"}",
    # The pasted text is decoded a second time: its nesting is read there.
    "pasted as text": json.dumps({"text": "[" * DEEP + "]" * DEEP}).encode(),
    "gzipped": gzip.compress(b"[" * DEEP + b"]" * DEEP),
}


def profile_rows(data_dir) -> dict[str, int]:
    conn = live_connection(data_dir)
    try:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in PROFILE_TABLES}
    finally:
        conn.close()


class TestDeepNestingOnTheProfileRoutes:
    """Issue 24, item 8 by name: both profile routes that decoded bodies themselves answered
    a deep nesting with a RecursionError's 500; now a 400 in the error shape, nothing
    written, no traceback logged."""

    @pytest.mark.parametrize("name", DEEP_PROFILE_BODIES)
    @pytest.mark.parametrize("path, code", [("/api/profile/results", "invalid_json"),
                                            ("/api/profile/import", "invalid_document")])
    async def test_a_deep_body_is_400_and_writes_nothing(self, client, data_dir, caplog, path,
                                                         code, name):
        import logging

        body = DEEP_PROFILE_BODIES[name]
        headers = {**AUTH, "Content-Type": "application/json"}
        if body.startswith(b"\x1f\x8b"):
            headers["Content-Encoding"] = "gzip"
        await client.get("/api/profile", headers=AUTH)  # the profile rows exist
        before = profile_rows(data_dir)
        caplog.set_level(logging.WARNING)
        response = await client.post(path, data=body, headers=headers)
        answer = await response.json()
        assert response.status == 400, answer
        assert set(answer) == {"error"} and answer["error"]["code"] == code, answer
        if not (name == "pasted as text" and path == "/api/profile/import"):  # a text there
            assert "nested" in answer["error"]["message"], answer
        assert profile_rows(data_dir) == before
        assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
