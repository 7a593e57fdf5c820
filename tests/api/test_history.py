"""`/api/characters/{cid}/history` and `…/history/search` (design §5 "The chat page", §9): the
pair's durable message log and the imported conversations, paged by a cursor and searched —
never more than `limit` lines, nothing of another user, every bad parameter answered in the
error shape, any search text safe."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest

from app.api.app_keys import DB, RUNTIME
from app.api.history import HISTORY_MAX_LIMIT, SEARCH_MAX_CHARS
from app.memory.message_log import LoggedMessage, MessageLog
from app.memory.turns import ORIGIN_OF_OCCASION
from tests.conftest import AUTH

BASE = "/api/characters/nova/history"
SEARCH = BASE + "/search"
DAY = 86400.0
START = 1_767_261_600.0  # 2026-01-01 10:00 UTC


async def log_rows(client, texts: list[str], *, user: str = "local", character: str = "nova",
                   start: float = START, step: float = 60.0, per_day: int = 1000) -> None:
    """Rows of the message log as the dispatcher writes them: user and answer alternating,
    `per_day` a calendar day."""
    log = MessageLog(client.app[DB])
    for index, text in enumerate(texts):
        at = start + (index // per_day) * DAY + (index % per_day) * step
        role = "user" if index % 2 == 0 else "assistant"
        await log.append(LoggedMessage(
            entry_key=f"{user}-{character}-{at}-{index}", user_id=user, character_id=character,
            turn_id=f"t{index // 2}", message_ids=[f"m{index // 2}"], role=role,
            occasion="" if role == "user" else "antwort", text=text, created=at,
            calendar_date=dt.datetime.fromtimestamp(at, dt.UTC).date().isoformat()))


async def get(client, url: str, status: int = 200, **params) -> dict:
    response = await client.get(url, params=params, headers=AUTH)
    body = await response.json()
    assert response.status == status, body
    return body


async def walk_back(client, limit: int) -> list[list[dict]]:
    """Every page from the newest back to the oldest."""
    pages = [(await get(client, BASE, limit=limit))]
    while pages[-1]["older"]:
        pages.append(await get(client, BASE, limit=limit, before=pages[-1]["older"]))
    return [page["messages"] for page in pages]


async def test_an_empty_history(client):
    assert await get(client, BASE) == {"messages": [], "older": None, "newer": None,
                                       "origins": ORIGIN_OF_OCCASION}


@pytest.mark.parametrize("limit", [1, 7, 50])
async def test_paging_back_reads_every_line_once_and_never_more_than_the_limit(client, limit):
    texts = [f"Zeile {i}" for i in range(123)]
    await log_rows(client, texts, per_day=40)
    pages = await walk_back(client, limit)
    assert all(1 <= len(page) <= limit for page in pages)
    lines = [line for page in reversed(pages) for line in page]
    assert [line["text"] for line in lines] == texts  # oldest first, nothing twice
    first = lines[0]
    assert first["source"] == "chat" and first["role"] == "user"
    assert first["calendar_date"] == "2026-01-01" and first["at"] == START
    assert (first["turn_id"], first["message_ids"]) == ("t0", ["m0"])
    assert lines[1]["origin"] == "antwort"
    assert lines[-1]["calendar_date"] == "2026-01-04"


async def test_the_route_never_returns_more_than_its_maximum(client):
    await log_rows(client, [f"Zeile {i}" for i in range(HISTORY_MAX_LIMIT + 30)])
    page = await get(client, BASE, limit=HISTORY_MAX_LIMIT)
    assert len(page["messages"]) == HISTORY_MAX_LIMIT and page["older"]
    page = await get(client, BASE)  # the default page
    assert len(page["messages"]) == 50


async def test_after_and_around_page_forward_from_a_line(client):
    texts = [f"Zeile {i}" for i in range(60)]
    await log_rows(client, texts, per_day=25)
    everything = [line for page in reversed(await walk_back(client, 60)) for line in page]
    hit = everything[30]
    around = await get(client, BASE, limit=10, around=hit["cursor"])
    assert [line["text"] for line in around["messages"]] == texts[25:35]
    assert around["older"] and around["newer"]
    forward, cursor = [], around["newer"]
    while cursor:
        page = await get(client, BASE, limit=10, after=cursor)
        assert len(page["messages"]) <= 10
        forward += page["messages"]
        cursor = page["newer"]
    assert [line["text"] for line in forward] == texts[35:]
    at_start = await get(client, BASE, limit=10, around=everything[1]["cursor"])
    assert [line["text"] for line in at_start["messages"]] == texts[:10]
    assert at_start["older"] is None


async def test_only_the_callers_lines_of_this_character(client):
    await log_rows(client, ["meins"])
    await log_rows(client, ["fremd"], user="anna")
    await log_rows(client, ["andere Figur"], character="kai")
    assert [line["text"] for line in (await get(client, BASE))["messages"]] == ["meins"]
    hits = (await get(client, SEARCH, q="fremd"))["hits"]
    assert hits == []


async def test_imported_conversations_appear_in_their_day_with_their_source(client):
    await log_rows(client, ["am ersten Tag", "Antwort am ersten Tag"])
    await log_rows(client, ["am dritten Tag"], start=START + 2 * DAY)
    response = await client.post("/api/journal/import", headers=AUTH, json={
        "date": "2026-01-02", "messages": [
            {"role": "user", "text": "Importiert ohne Zeit"},
            {"role": "assistant", "text": "Die andere Seite"}]})
    assert response.status == 201
    conversation_id = (await response.json())["conversation_id"]
    lines = (await get(client, BASE))["messages"]
    assert [(line["text"], line["source"]) for line in lines] == [
        ("am ersten Tag", "chat"), ("Antwort am ersten Tag", "chat"),
        ("Importiert ohne Zeit", "import"), ("Die andere Seite", "import"),
        ("am dritten Tag", "chat")]
    imported = lines[2]
    assert imported["calendar_date"] == "2026-01-02" and imported["at"] is None
    assert lines[1]["sort_at"] < imported["sort_at"] < lines[3]["sort_at"] < lines[4]["sort_at"]
    assert imported["conversation_id"] == conversation_id and imported["character_id"] is None
    # Paging one line at a time crosses the two sources without a gap or a repeat.
    one_by_one = [line for page in reversed(await walk_back(client, 1)) for line in page]
    assert [line["text"] for line in one_by_one] == [line["text"] for line in lines]


async def test_a_chat_export_imported_again_is_named_as_imported(client):
    document = {"kind": "novaberg.chat", "format_version": 1, "messages": [{
        "entry_key": "old:user", "turn_id": "old", "character_id": "nova", "role": "user",
        "text": "Aus dem alten Rechner", "created": START, "calendar_date": "2026-01-01"}]}
    response = await client.post("/api/imports", headers=AUTH, data=json.dumps(document))
    assert response.status == 200, await response.text()
    [line] = (await get(client, BASE))["messages"]
    assert (line["text"], line["source"]) == ("Aus dem alten Rechner", "export")


async def test_a_session_reset_leaves_the_history(client):
    response = await client.post("/api/characters/nova/messages", headers=AUTH,
                                 json={"text": "Hallo, ich bin Anna"})
    assert response.status == 202
    await client.app[RUNTIME].idle()
    before = (await get(client, BASE))["messages"]
    assert [line["role"] for line in before] == ["user", "assistant"]
    assert before[0]["text"] == "Hallo, ich bin Anna"
    response = await client.delete("/api/characters/nova/session", headers=AUTH)
    assert response.status == 204
    assert (await get(client, "/api/characters/nova/session"))["turns"] == []
    assert (await get(client, BASE))["messages"] == before


@pytest.mark.parametrize(("params", "code"), [
    ({"limit": "0"}, "invalid_limit"), ({"limit": str(HISTORY_MAX_LIMIT + 1)}, "invalid_limit"),
    ({"limit": "-1"}, "invalid_limit"), ({"limit": "zehn"}, "invalid_limit"),
    ({"limit": "１０"}, "invalid_limit"), ({"limit": ""}, "invalid_limit"),
    ({"before": "nonsense"}, "invalid_cursor"), ({"after": ""}, "invalid_cursor"),
    ({"around": base64.urlsafe_b64encode(b'["2026-01-01", "x", 0, 1]').decode()},
     "invalid_cursor"),
    ({"before": base64.urlsafe_b64encode(b'["2026-01-01", 1.0, 7, 1]').decode()},
     "invalid_cursor"),
    ({"before": base64.urlsafe_b64encode(b'{"a": 1}').decode()}, "invalid_cursor"),
])
async def test_bad_parameters_get_the_error_shape(client, params, code):
    body = await get(client, BASE, 400, **params)
    assert body["error"]["code"] == code and body["error"]["message"]


async def test_two_cursors_at_once_and_an_unknown_character(client):
    await log_rows(client, ["a", "b"])
    cursor = (await get(client, BASE))["messages"][0]["cursor"]
    body = await get(client, BASE, 400, before=cursor, after=cursor)
    assert body["error"]["code"] == "invalid_request"
    for url in ("/api/characters/nobody/history", "/api/characters/nobody/history/search"):
        assert (await get(client, url, 404, q="x"))["error"]["code"] == "unknown_character"
    response = await client.get(BASE)
    assert response.status == 401


async def test_search_finds_inflected_words_and_needs_every_term(client):
    await log_rows(client, ["Ich fahre nach Leipzig.", "Die Leipziger Messe ist groß.",
                            "Meine Schwester wohnt in Dresden.", "Zwillingsschwester in Leipzig"])
    texts = lambda body: [hit["text"] for hit in body["hits"]]  # noqa: E731
    assert texts(await get(client, SEARCH, q="Leipzig")) == [
        "Zwillingsschwester in Leipzig", "Die Leipziger Messe ist groß.",
        "Ich fahre nach Leipzig."]
    assert texts(await get(client, SEARCH, q="leipziger")) == [
        "Zwillingsschwester in Leipzig", "Die Leipziger Messe ist groß.",
        "Ich fahre nach Leipzig."]
    assert texts(await get(client, SEARCH, q="Schwester Leipzig")) == [
        "Zwillingsschwester in Leipzig"]
    assert texts(await get(client, SEARCH, q="Hamburg")) == []
    await log_rows(client, ["Zimmer 4711 im Hotel", "Zimmer 12 im Hotel"], start=START + DAY)
    assert texts(await get(client, SEARCH, q="Zimmer 4711")) == ["Zimmer 4711 im Hotel"]
    hit = (await get(client, SEARCH, q="Dresden"))["hits"][0]
    assert set(hit) >= {"cursor", "source", "role", "text", "at", "calendar_date"}


@pytest.mark.parametrize("query", [
    '"', '""', "Leipzig\"", "NEAR(a b)", "a* OR b", "AND", "NOT Leipzig", "^Leip", "text:Leipzig",
    "{text}: x", "(((", "Leipzig)", "'; DROP TABLE messages; --", "\\", "%", "_", "\x00",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "x" * SEARCH_MAX_CHARS, "Leipzig " * (SEARCH_MAX_CHARS // 8)])
async def test_any_search_text_is_safe(client, query):
    await log_rows(client, ["Ich fahre nach Leipzig."])
    body = await get(client, SEARCH, q=query)
    assert isinstance(body["hits"], list)
    assert (await get(client, BASE))["messages"][0]["text"] == "Ich fahre nach Leipzig."


async def test_an_overlong_search_text_is_refused(client):
    body = await get(client, SEARCH, 413, q="x" * (SEARCH_MAX_CHARS + 1))
    assert body["error"]["code"] == "query_too_long"


async def test_short_and_stopword_queries_match_as_substrings(client):
    await log_rows(client, ["Jo, das passt.", "Über den Fluss", "ok", "Das ist gut"])
    texts = lambda body: [hit["text"] for hit in body["hits"]]  # noqa: E731
    assert texts(await get(client, SEARCH, q="Jo")) == ["Jo, das passt."]
    assert texts(await get(client, SEARCH, q="üb")) == ["Über den Fluss"]
    assert texts(await get(client, SEARCH, q="OK")) == ["ok"]
    assert texts(await get(client, SEARCH, q="das")) == ["Das ist gut", "Jo, das passt."]
    assert texts(await get(client, SEARCH, q="ÜBER")) == ["Über den Fluss"]
    assert texts(await get(client, SEARCH, q="ist gut")) == ["Das ist gut"]
    assert texts(await get(client, SEARCH, q=", ")) == ["Jo, das passt."]
    assert texts(await get(client, SEARCH, q="  ")) == []


async def test_search_results_page_by_cursor_and_reach_imports(client):
    await log_rows(client, [f"Kaffee Nummer {i}" for i in range(25)])
    response = await client.post("/api/journal/import", headers=AUTH, json={
        "date": "2026-01-05", "messages": [{"role": "user", "text": "Kaffee im Import"}]})
    assert response.status == 201
    first = await get(client, SEARCH, q="Kaffee", limit=10)
    assert len(first["hits"]) == 10 and first["next"]
    assert first["hits"][0]["text"] == "Kaffee im Import"
    assert first["hits"][0]["source"] == "import"
    seen = [hit["text"] for hit in first["hits"]]
    cursor = first["next"]
    while cursor:
        page = await get(client, SEARCH, q="Kaffee", limit=10, before=cursor)
        assert len(page["hits"]) <= 10
        seen += [hit["text"] for hit in page["hits"]]
        cursor = page["next"]
    assert len(seen) == len(set(seen)) == 26
    short = await get(client, SEARCH, q="Nu", limit=10)
    assert len(short["hits"]) == 10 and short["next"]
    assert (await get(client, SEARCH, 400, q="Kaffee", limit=101))["error"]["code"] == \
        "invalid_limit"
    # A search hit opens its place in the history.
    hit = first["hits"][5]
    around = await get(client, BASE, limit=6, around=hit["cursor"])
    assert hit["text"] in [line["text"] for line in around["messages"]]


def test_m008_indexes_the_lines_that_were_there_before(tmp_path):
    """A database from before m008 (messages and an imported conversation) is searchable and
    pageable after it, and its triggers keep the index in step from then on."""
    from app.memory import history
    from app.storage.migrations import apply_migrations
    from tests.migrations_support import database_before

    conn = database_before(tmp_path / "old.sqlite3", "m008_message_history")
    with conn:
        conn.execute("INSERT INTO messages (entry_key, user_id, character_id, turn_id, role, "
                     "text, created, calendar_date) VALUES ('k', 'local', 'nova', 't', 'user', "
                     "'Wir fahren nach Leipzig', ?, '2026-01-01')", (START,))
        conn.execute("INSERT INTO journal_spaces VALUES ('s', 'local', 'user', 0)")
        conn.execute("INSERT INTO journal_days VALUES ('d', 's', '2026-01-02', '{}', 0)")
        conn.execute("INSERT INTO journal_conversations VALUES ('c', 's', 'd', 'import', NULL, 0)")
        conn.execute("INSERT INTO journal_messages VALUES ('j', 'c', 0, 'user', "
                     "'Leipziger Allerlei', NULL)")
    assert apply_migrations(conn)[0] == "m008_message_history"  # and the later ones
    hits, _ = history.search(conn, "local", "nova", "Leipzig", limit=10)
    assert [(hit.text, hit.source) for hit in hits] == [("Leipziger Allerlei", "import"),
                                                      ("Wir fahren nach Leipzig", "chat")]
    with conn:
        conn.execute("DELETE FROM journal_messages WHERE message_id = 'j'")
        conn.execute("DELETE FROM messages")
    assert history.search(conn, "local", "nova", "Leipzig", limit=10) == ([], None)
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    assert history.page(conn, "local", "nova", limit=5).lines == []
