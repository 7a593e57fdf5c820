"""Profile evidence is collected when a journal entry is saved (issue 22 §5, seed 004 §13), through
the real journal save routes: a strong edit of a generated draft, a heuristic deviation from the
user's usual writing, periodic readiness (time or volume); nothing under `frozen`, nothing before
the profile is confirmed, nothing for a draft saved unchanged. The candidates are read from the
store, not through `GET /api/profile/evidence` (which collects on its own)."""

from __future__ import annotations

import time

import msgspec
import pytest

from app.api.app_keys import DB
from app.profiles.writing import signals
from app.profiles.writing.store import ProfileStore
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.profiles.writing.test_evidence import DAY, _draft

SHORT = ["Kurz. Knapp. Gut.", "Regen. Tee. Buch.", "Markt. Brot. Heim.", "Rad. Wind. Kalt."]
LONG = ("Heute bin ich nach dem Frühstück sehr lange und ohne jedes Ziel durch die Altstadt "
        "gelaufen und habe dabei über alles Mögliche nachgedacht, was in den letzten Wochen "
        "passiert ist und was noch kommen mag.")


@pytest.fixture
async def save_client(make_settings, aiohttp_client):
    # Periodic readiness by time is far away; by volume after three own saves.
    settings = make_settings(profile_evidence_period=10 * 86400, profile_evidence_volume=3)
    return await aiohttp_client(create_app(settings, local_token=TOKEN))


async def _stored(client) -> list[dict]:
    """The stored candidates as the API shows them (the read models' fields by name)."""
    return msgspec.to_builtins(await ProfileStore(client.app[DB]).evidence("local"))


async def _confirm(client) -> None:
    assert (await client.put("/api/profile/core", headers=AUTH,
                             json={"value": "Knapp."})).status == 200


async def _save(client, day: str, text: str) -> dict:
    response = await client.post("/api/journal/entries", headers=AUTH,
                                 json={"date": day, "text": text})
    assert response.status == 201, await response.text()
    return await response.json()


class TestTriggersAtSave:
    async def test_a_strong_edit_of_a_draft_is_a_candidate_at_once(self, save_client):
        client = save_client
        await _confirm(client)
        draft = await _draft(client)
        entry = await (await client.post("/api/journal/entries", headers=AUTH, json={
            "date": DAY, "text": draft["text"], "draft_id": draft["draft_id"]})).json()
        assert await _stored(client) == []  # saved as generated: not the user's voice
        response = await client.put(f"/api/journal/entries/{entry['entry_id']}", headers=AUTH,
                                    json={"text": "Morgens Markt. Brot, warm noch, heim."})
        assert response.status == 200
        found = await _stored(client)
        assert [e["signal"] for e in found] == ["strong_edit"]
        assert found[0]["measure"]["trigger"] == "strong_edit"
        assert found[0]["measure"]["edit_share"] >= 0.3
        assert found[0]["ref"].startswith(f"entry:{entry['entry_id']}:")

    async def test_the_first_own_entry_is_periodic_and_then_volume_decides(self, save_client):
        client = save_client
        await _confirm(client)
        await _save(client, "2026-02-01", SHORT[0])
        assert [e["signal"] for e in await _stored(client)] == ["periodic"]
        await _save(client, "2026-02-02", SHORT[1])
        assert len(await _stored(client)) == 1  # not due yet: no candidate
        await _save(client, "2026-02-03", SHORT[2])
        assert len(await _stored(client)) == 1
        await _save(client, "2026-02-04", SHORT[3])  # the third save since the candidate
        found = await _stored(client)
        assert [e["signal"] for e in found] == ["periodic", "periodic"]
        assert found[0]["text"] == SHORT[3]

    async def test_a_text_unlike_the_usual_ones_is_a_deviation(self, save_client):
        client = save_client
        await _confirm(client)
        for day, text in enumerate(SHORT, start=1):
            await _save(client, f"2026-02-0{day}", text)
        before = len(await _stored(client))
        await _save(client, "2026-02-09", LONG)
        found = await _stored(client)
        assert len(found) == before + 1
        newest = next(e for e in found if e["text"] == LONG)
        assert newest["signal"] == "deviation"
        assert newest["measure"]["deviation"]["sentence_words"] >= 0.5

    async def test_frozen_collects_nothing_at_save_or_when_the_page_asks(self, save_client):
        client = save_client
        await _confirm(client)
        assert (await client.put("/api/profile/governance", headers=AUTH,
                                 json={"governance": "frozen"})).status == 200
        await _save(client, "2026-02-01", SHORT[0])
        await _save(client, "2026-02-09", LONG)
        assert await _stored(client) == []
        body = await (await client.get("/api/profile/evidence", headers=AUTH)).json()
        assert body["added"] == 0 and body["evidence"] == []

    async def test_an_unconfirmed_profile_collects_nothing_at_save(self, save_client):
        await _save(save_client, "2026-02-01", LONG)
        assert await _stored(save_client) == []

    async def test_a_saved_version_is_a_candidate_once(self, save_client):
        client = save_client
        await _confirm(client)
        await _save(client, "2026-02-01", SHORT[0])
        assert len(await _stored(client)) == 1
        # The explicit collection (the page asks) finds nothing new for the same version.
        body = await (await client.get("/api/profile/evidence", headers=AUTH)).json()
        assert body["added"] == 0


class TestSignals:
    def test_measures_count_words_per_sentence_and_letters_per_word(self):
        assert signals.measure("Ein Satz hier. Noch einer!") == signals.Measures(2.5, 4.0)
        assert signals.measure("") == signals.Measures(0.0, 0.0)

    def test_no_deviation_before_enough_baseline(self):
        usual = [signals.measure(t) for t in SHORT[:2]]
        assert signals.deviation(signals.measure(LONG), usual, 0.5) == {}
        usual = [signals.measure(t) for t in SHORT]
        assert "sentence_words" in signals.deviation(signals.measure(LONG), usual, 0.5)
        assert signals.deviation(signals.measure("Wind. Baum. Haus."), usual, 0.5) == {}

    # `days_ago`: when the last candidate was, in days before now (None: never) — an age,
    # not a moment, so that the test ids do not depend on the clock.
    @pytest.mark.parametrize(("edit", "deviations", "days_ago", "since", "expected"), [
        (0.9, {}, 0, 0, "strong_edit"),
        (0.9, {"word_chars": 0.7}, 0, 0, "strong_edit"),
        (0.1, {"word_chars": 0.7}, 0, 0, "deviation"),
        (None, {}, None, 0, "periodic"),
        (None, {}, 11, 0, "periodic"),
        (0.1, {}, 0, 2, "periodic"),
        (0.1, {}, 0, 1, None),
        (None, {}, 1, 0, None),
    ])
    def test_the_first_trigger_that_holds_decides(self, edit, deviations, days_ago, since,
                                                  expected):
        now = time.time()
        last = None if days_ago is None else now - days_ago * 86400
        assert signals.trigger(edit_share=edit, strong_share=0.3, deviations=deviations,
                               last_candidate_at=last, saves_since=since, now=now,
                               period=10 * 86400, volume=3) == expected


def test_candidates_from_before_m010_survive_it_and_the_new_signals_fit(tmp_path):
    """m010 rebuilds `writing_profile_evidence` for its new signals: old rows stay whole."""
    import sqlite3

    from app.storage.migrations import apply_migrations
    from tests.migrations_support import database_before

    conn = database_before(tmp_path / "old.sqlite3", "m010_profile_review_privacy")
    with conn:
        conn.execute("INSERT INTO writing_profile_evidence VALUES ('ev_1', 'local', "
                     "'strong_edit', 'entry:e:v', 'Alt.', 1.0, 'hint', '{\"chars\": 4}', 2.0)")
    assert apply_migrations(conn)[0] == "m010_profile_review_privacy"  # then any later ones
    row = conn.execute("SELECT * FROM writing_profile_evidence").fetchone()
    assert tuple(row) == ("ev_1", "local", "strong_edit", "entry:e:v", "Alt.", 1.0, "hint",
                          '{"chars": 4}', 2.0)
    with conn:
        for number, signal in enumerate(("deviation", "periodic")):
            conn.execute("INSERT INTO writing_profile_evidence VALUES (?, 'local', ?, ?, 'x', "
                         "1.0, '', '{}', 3.0)", (f"ev_{number + 2}", signal, f"ref{number}"))
    with pytest.raises(sqlite3.IntegrityError), conn:
        conn.execute("INSERT INTO writing_profile_evidence VALUES ('ev_9', 'local', 'guess', "
                     "'r9', 'x', 1.0, '', '{}', 3.0)")
    conn.close()
