"""Golden API wire (issue 37, item 1): the bytes of every GET of the journal, writing profile,
characters, memories, lists and reminders routes, recorded on the code before the read models
became msgspec structs, so that refactor changes no byte. A realistic state is built through the
real server (and the stores the API reads), then every GET route of those rooms (taken from the
app's router, so a new route cannot slip past) is asked; status, content type and body are
compared with `tests/data/golden_wire/api_gets.json`.

What is not deterministic is named, not hidden: generated ids (`<prefix>_<32 or 16 hex>` or
32 hex) become `<id:N>` by first appearance, epoch times `<time>`, a stage's duration in the
trace `<ms>`, today's date `<today>` and an ISO time of today `<now>`; nothing else is touched.
A binary body (a photo, a card) is kept as its length and SHA-256.

To rewrite the file after a change that is meant to change the wire:
`GOLDEN_WIRE_WRITE=1 .venv/bin/python -m pytest -q -n 0 tests/test_golden_api.py`
(never set in CI: the test fails while it is set, so a rewrite cannot pass unnoticed)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from app.api.app_keys import DB, REDIS
from app.memory.lists import ListStore
from app.memory.long_term import Change, LongTermMemory
from tests.conftest import AUTH
from tests.journal.test_api import DATE, draft_of, generate, import_day
from tests.journal.test_media import image_bytes, upload

GOLDEN = Path(__file__).parent / "data" / "golden_wire" / "api_gets.json"
REWRITE = "GOLDEN_WIRE_WRITE"
ROOMS = ("/api/journal", "/api/profile", "/api/characters")
_ID = re.compile(r"\b(?:([a-z]+)_)?([0-9a-f]{32})\b|\b([a-z]+)_([0-9a-f]{16})\b")
_MS = re.compile(r'"ms": \d+(?:\.\d+)?')
_TIME = re.compile(r"(?<![\w.])1[6-9]\d{8}(?:\.\d+)?(?![\w.])")


class Normalizer:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, text: str) -> str:
        def named(match: re.Match[str]) -> str:
            prefix = match.group(1) or match.group(3)
            number = self.ids.setdefault(match.group(2) or match.group(4), len(self.ids) + 1)
            return (f"{prefix}_" if prefix else "") + f"<id:{number}>"

        today = {dt.date.today().isoformat(), dt.datetime.now(dt.UTC).date().isoformat()}
        text = _MS.sub('"ms": <ms>', _TIME.sub("<time>", _ID.sub(named, text)))
        for day in today:
            text = re.sub(rf"{day}T[0-9:.]+(?:\+00:00|Z)?", "<now>", text)
            text = text.replace(f'"{day}"', '"<today>"')
        return text


async def build_state(client: Any) -> dict[str, str]:
    """A day imported and drafted by the offline model, an entry with two versions and a photo, a
    trashed entry, a trait in the writing profile, memories, lists and reminders of nova."""
    await import_day(client)
    job = await generate(client)
    draft = await draft_of(client, job)
    entry = (await client.post("/api/journal/entries", headers=AUTH, json={
        "date": DATE, "text": "Erste Fassung.", "draft_id": job["draft_id"]})).status
    assert entry == 201
    entries = await (await client.get(f"/api/journal/days/{DATE}", headers=AUTH)).json()
    entry_id = entries["entry"]["entry_id"]
    assert (await client.put(f"/api/journal/entries/{entry_id}", headers=AUTH,
                             json={"text": "Zweite Fassung, mit Umlauten: äöü."})).status == 200
    asset = await upload(client, entry_id, image_bytes("PNG", (64, 48)), name="see.png")
    trashed = await (await client.post("/api/journal/entries", headers=AUTH, json={
        "date": "2026-03-02", "text": "Weg damit."})).json()
    assert (await client.delete(f"/api/journal/entries/{trashed['entry_id']}",
                                headers=AUTH)).status in (200, 204)
    trait = await client.post("/api/profile/traits", headers=AUTH,
                              json={"key": "stil", "value": "schreibt kurze Sätze"})
    assert trait.status in (200, 201), await trait.text()
    memory = LongTermMemory(client.app[DB])
    for index, text in enumerate(["Ich mag Tee.", "Meine Schwester heißt Jana."]):
        await memory.apply(f"seed-{index}", "local", "nova",
                           [Change("remember", text, "fact", 0.7)], [f"m{index}"], 1000.0 + index)
    lists = ListStore(client.app[REDIS], "local", "nova")
    await lists.apply("Einkaufsliste", add=["Milch", "Eier"])
    await lists.apply("Baumarkt", add=["Schrauben"])
    for text, due in (("Zahnarzt", 1893456000.0), ("Mama anrufen", 1893542400.0)):
        made = await client.post("/api/characters/nova/reminders", headers=AUTH,
                                 json={"text": text, "due_at": due})
        assert made.status == 201, await made.text()
    return {"date": DATE, "month": DATE[:7], "job_id": job["job_id"],
            "draft_id": draft["draft_id"], "entry_id": entry_id, "asset_id": asset["asset_id"],
            "cid": "nova", "proposal_id": "none", "name": "Einkaufsliste"}


def get_routes(app: Any) -> list[str]:
    paths = {resource.canonical for resource in app.router.resources()
             if resource.canonical.startswith(ROOMS)
             and any(route.method == "GET" for route in resource)}
    return sorted(paths)


async def answer(client: Any, path: str, norm: Normalizer) -> dict[str, Any]:
    response = await client.get(path, headers=AUTH)
    raw = await response.read()
    kind = response.content_type
    if kind.startswith("image/") or kind == "application/octet-stream":
        body: Any = {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    else:
        body = norm(raw.decode("utf-8"))
    return {"status": response.status, "content_type": response.headers.get("Content-Type"),
            "body": body}


async def test_every_get_of_the_rooms_answers_the_golden_bytes(client):
    state = await build_state(client)
    norm = Normalizer()
    for value in state.values():
        norm(value)  # the state's ids are numbered first, in a fixed order
    asked: dict[str, Any] = {}
    for route in get_routes(client.app):
        path = route.format(**state)
        asked[route] = await answer(client, path, norm)
        if route == "/api/journal/export":
            asked[route + "?format=json"] = await answer(client, path + "?format=json", norm)
        if route == "/api/characters/{cid}/memories":
            asked[route + "?q=Tee"] = await answer(client, path + "?q=Tee", norm)
    text = json.dumps(asked, ensure_ascii=False, indent=1) + "\n"
    if os.environ.get(REWRITE):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
        raise AssertionError(f"{GOLDEN.name} rewritten; unset {REWRITE} and run again")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert sorted(golden) == sorted(asked), "a GET route came or went: rewrite the golden file"
    for route, recorded in golden.items():
        assert asked[route] == recorded, route


def test_the_normalizer_names_ids_and_times_and_nothing_else():
    norm = Normalizer()
    text = '{"a": "ent_' + "ab" * 16 + '", "b": ' + "c" * 32 + ', "t": 1765100000.25, "n": 42}'
    assert norm(text) == '{"a": "ent_<id:1>", "b": <id:2>, "t": <time>, "n": 42}'
    norm = Normalizer()
    assert norm('"ms": 1.5, "2026-03-01" 17 "x_' + "ab" * 16 + '" trait_' + "d" * 16) == (
        '"ms": <ms>, "2026-03-01" 17 "x_<id:1>" trait_<id:2>')
    today = dt.date.today().isoformat()
    assert norm(f'"{today}" "{today}T12:00:01+00:00"') == '"<today>" "<now>"'
