"""The card process (app/characters/apart.py) under the real command line: `python -m app`
reads an imported card in a spawned process, a bad card comes back as 400, and the server
stays the one server (`spawn` must run the card reader there, never a second CLI)."""

from __future__ import annotations

from tests.conftest import TOKEN
from tests.procs import AppProcess

CARD = {"spec": "chara_card_v2", "spec_version": "2.0",
        "data": {"name": "Mira", "description": "Eine Buchhändlerin.", "first_mes": "Hallo!"}}


def test_the_cli_server_reads_a_card_in_its_card_process(tmp_path):
    app = AppProcess(tmp_path / "data", token=TOKEN).start()
    try:
        status, body = app.post("/api/characters/import?id=mira", CARD, timeout=60)
        assert status == 201, body
        assert body["character"]["name"] == "Mira"
        status, body = app.post("/api/characters/import?id=mira2", {"spec": "x"}, timeout=60)
        assert status == 400 and body["error"]["code"] == "invalid_card"
        status, listed = app.get("/api/characters")
        assert status == 200 and [c["id"] for c in listed] == ["nova", "mira"]
    finally:
        assert app.stop() == 0
    assert app.output().count("listening") <= 1, app.output()
