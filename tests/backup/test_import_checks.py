"""Issue 24, items 6 and 7: every import path refuses what it cannot store faithfully.

Paths: `POST /api/journal/import` (a day's conversation), `POST /api/imports` (a chat,
journal or memory export) and `novaberg import FILE` (the same documents from the command
line). Each refuses with 400 in the error shape (the CLI: one line, exit code 2) and writes
nothing: a date that is not the canonical `YYYY-MM-DD`, a moment outside 1970..9998, an empty
text, an empty key, a character this install does not know, a version id or seq twice. A
version id another user owns (like an entry id) makes its entry skipped, never a 500.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import strategies as st

from app.api.app_keys import DB
from app.core.clock import FIRST_MOMENT, LAST_MOMENT
from app.core.settings import ENV_PREFIX
from app.journal.store import JournalStore
from app.storage.dialect import tables
from app.wiring.cli import main
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.own_loop import served_on_own_loop
from tests.store import live_connection

NON_CANONICAL_DATES = ["20200107", "2020-W02-3", "2020-007", "2020-01-07T00:00",
                       "\u0662\u0660\u0662\u0660-\u0660\u0661-\u0660\u0667", " 2020-01-07",
                       "2020-01-07\n", "2020-02-30", "0000-01-01", ""]
EMPTY_TEXTS = ["", "   ", "\u200b\u200d", "\n\t"]
TABLES = ("messages", "memories", "journal_entries", "journal_entry_versions",
          "journal_conversations", "journal_messages")


@pytest.fixture
async def client(aiohttp_client, settings):
    return await aiohttp_client(create_app(settings, local_token=TOKEN))


@contextlib.contextmanager
def store_of(data_dir) -> Iterator[Any]:
    """The store the test's apps and CLI use (the data dir's SQLite, or under
    `--engine=postgresql` the test's database, which the environment names)."""
    conn = live_connection(data_dir)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def counts(data_dir) -> dict[str, int]:
    """Rows per table; a store no app has migrated yet holds none."""
    if not os.environ.get(f"{ENV_PREFIX}DATABASE_URL") and \
            not (data_dir / "novaberg.sqlite3").exists():
        return dict.fromkeys(TABLES, 0)
    with store_of(data_dir) as conn:
        if "messages" not in tables(conn):
            return dict.fromkeys(TABLES, 0)
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}


def chat_document(**change: Any) -> bytes:
    message = {"entry_key": "k1", "turn_id": "t1", "character_id": "nova", "role": "user",
               "text": "Hallo", "created": 1772323200.0, "calendar_date": "2026-03-01",
               **change}
    return json.dumps({"kind": "novaberg.chat", "format_version": 1,
                       "messages": [message]}).encode()


def version(version_id: str = "v1", seq: int = 1, text: str = "Ich war im Park.") -> dict:
    return {"version_id": version_id, "seq": seq, "origin": "edit", "text": text,
            "created_at": 1772323200.0}


def journal_document(*entries: dict) -> bytes:
    return json.dumps({"kind": "novaberg.journal", "format_version": 1,
                       "entries": list(entries)}).encode()


def entry(entry_id: str = "e1", date: str = "2026-03-01", versions: list[dict] | None = None,
          current: str = "v1") -> dict:
    return {"entry_id": entry_id, "date": date, "created_at": 1772323200.0,
            "current_version_id": current, "versions": versions or [version()]}


def memory_document(**change: Any) -> bytes:
    memory = {"memory_id": "1" * 32, "character_id": "nova", "text": "Ich mag Tee.", "kind": "fact",
              "importance": 0.5, "created_at": 1.0, "refreshed_at": 1.0, **change}
    return json.dumps({"kind": "novaberg.memories", "format_version": 1,
                       "memories": [memory]}).encode()


async def refused(client, data_dir, path: str, expected: str, **request: Any) -> None:
    before = counts(data_dir)
    response = await client.post(path, headers=AUTH, **request)
    body = await response.json()
    assert response.status == 400, body
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert expected in body["error"]["message"], body
    assert counts(data_dir) == before


class TestDates:
    @pytest.mark.parametrize("date", NON_CANONICAL_DATES)
    async def test_chat_import(self, client, data_dir, date):
        await refused(client, data_dir, "/api/imports", "calendar_date",
                      data=chat_document(calendar_date=date))

    @pytest.mark.parametrize("date", NON_CANONICAL_DATES)
    async def test_journal_document_import(self, client, data_dir, date):
        await refused(client, data_dir, "/api/imports", "date",
                      data=journal_document(entry(date=date)))

    @pytest.mark.parametrize("date", NON_CANONICAL_DATES)
    async def test_journal_current_only_import(self, client, data_dir, date):
        document = {"kind": "novaberg.journal_export", "format_version": 1, "entries": [
            {"entry_id": "e1", "date": date, "text": "Park.", "version_id": "v1"}]}
        await refused(client, data_dir, "/api/imports", "date", data=json.dumps(document))

    @pytest.mark.parametrize("date", NON_CANONICAL_DATES)
    async def test_journal_day_import(self, client, data_dir, date):
        response = await client.post("/api/journal/import", headers=AUTH, json={
            "date": date, "messages": [{"role": "user", "text": "Hallo"}]})
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "invalid_date"
        assert counts(data_dir)["journal_messages"] == 0

    async def test_the_canonical_date_is_stored_as_sent(self, client, data_dir):
        response = await client.post("/api/imports", headers=AUTH,
                                     data=chat_document(calendar_date="2020-01-07"))
        assert response.status == 200
        with store_of(data_dir) as conn:
            assert [tuple(row) for row in conn.execute("SELECT calendar_date FROM messages")] \
                == [("2020-01-07",)]


class TestMoments:
    @pytest.mark.parametrize("at", [1e20, LAST_MOMENT + 1, -1.0, "9999-12-31T23:59:59-05:00",
                                    "0001-01-01T00:00:00+05:00", "1969-12-31T23:59:59+00:00"])
    async def test_journal_day_import_outside_1970_to_9998(self, client, data_dir, at):
        response = await client.post("/api/journal/import", headers=AUTH, json={
            "date": "2026-03-01", "messages": [{"role": "user", "text": "Hallo", "at": at}]})
        body = await response.json()
        assert response.status == 400, body
        assert body["error"]["code"] == "invalid_at"
        assert counts(data_dir)["journal_messages"] == 0


class TestMomentsEveryZoneShows:
    """A moment of 9999's last hours is year 10000 east of UTC: no day or local time can be
    made of it there. Refused on every way in (the journal import answered 500 for it, an
    export document took it and made its user's Markdown exports 500 for good)."""

    @pytest.fixture(params=["Asia/Tokyo", "Pacific/Kiritimati"])
    async def eastern(self, request, aiohttp_client, make_settings):
        settings = make_settings(llm_provider="offline", timezone=request.param)
        return await aiohttp_client(create_app(settings, local_token=TOKEN))

    @pytest.mark.parametrize("at", ["9999-12-31T23:00:00Z", 253402297200.0,
                                    "9999-12-31T10:00:00Z", "9998-12-31T23:59:59.5+00:00"])
    async def test_the_journal_import_refuses_it(self, eastern, data_dir, at):
        for date in ("9999-12-31", "9999-01-01"):
            await refused(eastern, data_dir, "/api/journal/import", "1970 to the end of 9998",
                          json={"date": date,
                                "messages": [{"role": "user", "text": "Hallo", "at": at}]})
        assert counts(data_dir)["journal_messages"] == 0

    async def test_the_last_moment_taken_has_its_day_in_that_zone(self, eastern, data_dir):
        response = await eastern.post("/api/journal/import", headers=AUTH, json={
            "date": "9999-01-01",
            "messages": [{"role": "user", "text": "Hallo", "at": "9998-12-31T23:59:59Z"}]})
        assert response.status == 201, await response.json()

    async def test_an_export_document_with_it_is_refused(self, eastern, data_dir):
        late = 253402297200.0  # 9999-12-31T23:00:00Z
        await refused(eastern, data_dir, "/api/imports", "created",
                      data=chat_document(created=late))
        await refused(eastern, data_dir, "/api/imports", "created_at",
                      data=memory_document(created_at=late, refreshed_at=late))
        assert not any(counts(data_dir).values())


class TestEmptyTextsAndKeys:
    @pytest.mark.parametrize("text", EMPTY_TEXTS)
    async def test_chat_text(self, client, data_dir, text):
        await refused(client, data_dir, "/api/imports", "text", data=chat_document(text=text))

    @pytest.mark.parametrize("field", ["entry_key", "turn_id", "character_id"])
    @pytest.mark.parametrize("value", ["", "  "])
    async def test_chat_keys(self, client, data_dir, field, value):
        await refused(client, data_dir, "/api/imports", field,
                      data=chat_document(**{field: value}))

    @pytest.mark.parametrize("text", EMPTY_TEXTS)
    async def test_journal_version_text(self, client, data_dir, text):
        await refused(client, data_dir, "/api/imports", "text",
                      data=journal_document(entry(versions=[version(text=text)])))

    async def test_journal_current_only_text(self, client, data_dir):
        document = {"kind": "novaberg.journal_export", "format_version": 1, "entries": [
            {"entry_id": "e1", "date": "2026-03-01", "text": " \u200b ", "version_id": "v1"}]}
        await refused(client, data_dir, "/api/imports", "text", data=json.dumps(document))

    @pytest.mark.parametrize("document", [
        journal_document(entry(entry_id="")),
        journal_document(entry(versions=[version(version_id=" ")], current=" ")),
    ], ids=["entry_id", "version_id"])
    async def test_journal_keys(self, client, data_dir, document):
        await refused(client, data_dir, "/api/imports", "empty", data=document)


class TestUnknownCharacters:
    async def test_chat(self, client, data_dir):
        await refused(client, data_dir, "/api/imports", "character",
                      data=chat_document(character_id="nobody"))

    async def test_memories(self, client, data_dir):
        await refused(client, data_dir, "/api/imports", "character",
                      data=memory_document(character_id="nobody"))


class TestJournalVersionIds:
    async def test_a_version_id_twice_in_an_entry(self, client, data_dir):
        await refused(client, data_dir, "/api/imports", "v1", data=journal_document(
            entry(versions=[version("v1", 1), version("v1", 2)])))

    async def test_a_seq_twice_in_an_entry(self, client, data_dir):
        await refused(client, data_dir, "/api/imports", "seq", data=journal_document(
            entry(versions=[version("v1", 1), version("v2", 1)])))

    async def test_a_version_id_in_two_entries(self, client, data_dir):
        await refused(client, data_dir, "/api/imports", "v1", data=journal_document(
            entry("e1", "2026-03-01"), entry("e2", "2026-03-02")))

    @pytest.mark.parametrize("seq", [0, -1, 2**31, 2**63, 2**64 - 1, -(2**63) - 1])
    async def test_a_seq_outside_1_to_2_31_is_refused(self, client, data_dir, seq):
        """A seq beyond SQLite's integers was a 500; one near its end would make the next
        edit's number overflow."""
        await refused(client, data_dir, "/api/imports", "seq", data=journal_document(
            entry(versions=[version("v1", seq)])))

    async def test_another_users_version_id_skips_the_entry(self, client, data_dir):
        """No oracle: a version id that exists (here: another user's) answers like an entry
        id that exists — skipped — and her entry stays as it was."""
        store = JournalStore(client.app[DB])
        theirs = await store.create_entry("anna", "2026-03-01", "Annas Tag.", None)
        their_version = (await store.entry("anna", theirs)).current_version_id
        document = journal_document(
            entry("mine", "2026-03-05", [version(their_version, 1, "Fremd.")], their_version),
            entry("fresh", "2026-03-06", [version("v-fresh", 1, "Neu.")], "v-fresh"))
        response = await client.post("/api/imports", headers=AUTH, data=document)
        assert response.status == 200, await response.text()
        assert await response.json() == {"kind": "novaberg.journal", "imported": 1, "skipped": 1}
        assert (await store.entry("anna", theirs)).versions[0].text == "Annas Tag."
        assert [e.entry_id for e in await store.entries("local", deleted=False)] == ["fresh"]


class TestTheCommandLine:
    """`novaberg import FILE` runs the same checks and says what is wrong in one line."""

    @pytest.mark.parametrize("document, expected", [
        (chat_document(calendar_date="20200107"), "calendar_date"),
        (chat_document(character_id="nobody"), "character"),
        (chat_document(text="  "), "text"),
        (journal_document(entry(versions=[version("v1", 1), version("v2", 1)])), "seq"),
        (b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "JSON"),
    ], ids=["date", "character", "text", "seq", "deep"])
    def test_refused_with_one_line_and_exit_2(self, data_dir, tmp_path, capsys, document,
                                              expected):
        path = tmp_path / "bad.json"
        path.write_bytes(document)
        assert main(["--data-dir", str(data_dir), "import", str(path)]) == 2
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1, err
        assert not any(counts(data_dir).values())


# --- any document hypothesis builds (items 6 and 7) --------------------------------------------

WORDS = st.text("abcdefghijklmnopqrstuvwxyzäöüß ", min_size=1, max_size=12).filter(str.strip)
DAYS = st.dates(dt.date(1971, 1, 2), dt.date(9999, 12, 30)).map(dt.date.isoformat)
MOMENTS = st.floats(FIRST_MOMENT, LAST_MOMENT)
IDS = st.text("abcdef0123", min_size=1, max_size=4)
DATE_SHAPE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# What a crafted file puts into one field instead (each must refuse the whole document).
HOSTILE = {
    "text": st.sampled_from(["", " ", "\u200b", "\n\t", "\u200d\u00ad"]),
    "date": st.sampled_from(["20200107", "2020-W02-3", "2020-02-30", "", "0000-01-01",
                             "2020-007", " 2020-01-07", "2020-01-07T00:00", "+2020-01-07"])
            | st.text(max_size=10).filter(lambda t: not DATE_SHAPE.fullmatch(t)),
    "moment": st.integers(min_value=-2**70, max_value=-1)
              | st.integers(int(LAST_MOMENT) + 1, 2**70)
              | st.floats(max_value=-1e-9) | st.floats(min_value=LAST_MOMENT + 0.5),
    "key": st.sampled_from(["", " ", "\t"]),
    "character": st.sampled_from(["nobody", "", " "]),
    "seq": st.integers(min_value=-2**70, max_value=0) | st.integers(2**31, 2**70),
}
# Per kind: its list, and each field's class of hostile values.
FIELDS = {
    "novaberg.chat": ("messages", {"entry_key": "key", "turn_id": "key", "character_id":
                                   "character", "text": "text", "created": "moment",
                                   "calendar_date": "date"}),
    "novaberg.journal": ("entries", {"entry_id": "key", "date": "date", "created_at": "moment",
                                     "text": "text", "seq": "seq", "version_id": "key"}),
    "novaberg.memories": ("memories", {"memory_id": "key", "character_id": "character",
                                       "text": "text", "created_at": "moment",
                                       "refreshed_at": "moment"}),
}


@st.composite
def chat_documents(draw) -> dict:
    keys = draw(st.lists(IDS, min_size=1, max_size=3, unique=True))
    return {"kind": "novaberg.chat", "format_version": 1, "messages": [
        {"entry_key": key, "turn_id": draw(IDS), "character_id": "nova",
         "role": draw(st.sampled_from(["user", "assistant"])), "text": draw(WORDS),
         "created": draw(MOMENTS), "calendar_date": draw(DAYS)} for key in keys]}


@st.composite
def journal_documents(draw) -> dict:
    entries = []
    for n, entry_id in enumerate(draw(st.lists(IDS, min_size=1, max_size=3, unique=True))):
        seqs = draw(st.lists(st.integers(1, 50), min_size=1, max_size=3, unique=True))
        versions = [{"version_id": f"{n}-{i}-{draw(IDS)}", "seq": seq, "origin": "edit",
                     "text": draw(WORDS), "created_at": draw(MOMENTS)}
                    for i, seq in enumerate(seqs)]
        entries.append({"entry_id": entry_id, "date": draw(DAYS), "created_at": draw(MOMENTS),
                        "current_version_id": draw(st.sampled_from(versions))["version_id"],
                        "versions": versions})
    return {"kind": "novaberg.journal", "format_version": 1, "entries": entries}


MEMORY_IDS = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)  # long_term.MEMORY_ID


@st.composite
def memory_documents(draw) -> dict:
    ids = draw(st.lists(MEMORY_IDS, min_size=1, max_size=3, unique=True))
    return {"kind": "novaberg.memories", "format_version": 1, "memories": [
        {"memory_id": memory_id, "character_id": "nova", "text": draw(WORDS), "kind": "fact",
         "importance": draw(st.floats(0, 1)), "created_at": draw(MOMENTS),
         "refreshed_at": draw(MOMENTS)} for memory_id in ids]}


DOCUMENTS = chat_documents() | journal_documents() | memory_documents()


@st.composite
def spoiled_documents(draw) -> dict:
    """A valid document with one field of one item replaced by a hostile value."""
    document = draw(DOCUMENTS)
    items, fields = FIELDS[document["kind"]]
    item = draw(st.sampled_from(document[items]))
    field = draw(st.sampled_from(sorted(fields)))
    value = draw(HOSTILE[fields[field]])
    if field in ("text", "seq", "version_id") and document["kind"] == "novaberg.journal":
        draw(st.sampled_from(item["versions"]))[field] = value
        if field == "version_id":
            item["current_version_id"] = value
    else:
        item[field] = value
    return document


@pytest.fixture
def running(settings):
    with served_on_own_loop(create_app(settings, local_token=TOKEN)) as served:
        yield served


def stored_days(data_dir) -> set[str]:
    with store_of(data_dir) as conn:
        return {r[0] for r in conn.execute(
            "SELECT calendar_date FROM messages UNION SELECT calendar_date FROM journal_days")}


class TestAnyDocument:
    """Documents hypothesis builds: a valid one is taken and stays usable, one hostile field
    anywhere refuses it whole."""

    def test_a_valid_document_is_imported_and_every_day_and_export_opens(self, running,
                                                                          data_dir):
        from hypothesis import HealthCheck, given
        from hypothesis import settings as hypothesis_settings

        loop, test_client = running

        async def exchange(document: dict) -> None:
            response = await test_client.post("/api/imports", headers=AUTH,
                                              data=json.dumps(document))
            body = await response.json()
            assert response.status == 200, (body, document)
            items = document[FIELDS[document["kind"]][0]]
            assert body["imported"] + body["skipped"] == len(items)
            for kind in ("chat", "journal", "memories"):
                for fmt in ("json", "md"):
                    export = await test_client.get(f"/api/exports/{kind}?format={fmt}",
                                                   headers=AUTH)
                    assert export.status == 200, (kind, fmt, await export.text())
            for day in stored_days(data_dir):
                assert day == dt.date.fromisoformat(day).isoformat(), day
                opened = await test_client.get(f"/api/journal/days/{day}", headers=AUTH)
                assert opened.status == 200, (day, await opened.text())
            again = await test_client.post("/api/imports", headers=AUTH,
                                           data=json.dumps(document))
            assert (await again.json())["imported"] == 0  # ids kept: nothing twice

        @hypothesis_settings(max_examples=30, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                    HealthCheck.too_slow])
        @given(DOCUMENTS)
        def run(document: dict) -> None:
            loop.run_until_complete(exchange(document))

        run()

    def test_one_hostile_field_anywhere_refuses_the_whole_document(self, running, data_dir):
        from hypothesis import HealthCheck, given
        from hypothesis import settings as hypothesis_settings

        loop, test_client = running

        async def exchange(document: dict) -> None:
            before = counts(data_dir)
            response = await test_client.post("/api/imports", headers=AUTH,
                                              data=json.dumps(document))
            body = await response.json()
            assert response.status == 400, (body, document)
            assert set(body) == {"error"} and body["error"]["code"] == "invalid_import"
            assert counts(data_dir) == before, document

        @hypothesis_settings(max_examples=60, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                    HealthCheck.too_slow])
        @given(spoiled_documents())
        def run(document: dict) -> None:
            loop.run_until_complete(exchange(document))

        run()
