"""Hostile character cards (app/characters/cards.py, pictures.py, app/api/characters.py):
files written to cost the server time or memory or to break its parser — a decompression
bomb, a compressed text chunk that inflates without end, a chunk longer than the file, a
chunk that is not base64, JSON nested without end or holding numbers no JSON has. Each is
refused with an error that names the problem, in the API's error shape, and nothing is
stored. The PNGs are written chunk by chunk here, as an attacker would, not through Pillow."""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.characters.cards import MAX_DEPTH, CardError, read_card
from app.characters.lore import MAX_ENTRIES
from app.characters.pictures import MAX_PIXELS
from tests.conftest import AUTH

CARD = {"spec": "chara_card_v2", "spec_version": "2.0",
        "data": {"name": "Eve", "description": "{{char}} is a test."}}


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width: int = 4, height: int = 4, *, before: bytes = b"", idat: bytes | None = None,
        after: bytes = b"") -> bytes:
    """A PNG of `width` × `height` RGB pixels whose image data is one compressed block of
    zero rows (a few hundred bytes for any size: what a decompression bomb looks like)."""
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    if idat is None:
        idat = zlib.compress(b"\x00" * (3 * width + 1) * min(height, 64), 9)
    return (b"\x89PNG\r\n\x1a\n" + header + before + chunk(b"IDAT", idat) + after
            + chunk(b"IEND", b""))


def text(keyword: str, value: bytes) -> bytes:
    return chunk(b"tEXt", keyword.encode() + b"\x00" + value)


def card_chunk(document: object = CARD, keyword: str = "chara") -> bytes:
    return text(keyword, base64.b64encode(json.dumps(document).encode()))


def nested(depth: int) -> bytes:
    """A V2 card whose `extensions` hold lists nested so that the whole file is `depth` deep
    (the card itself is three: the document, `data`, `extensions`)."""
    inner = depth - 3
    return (b'{"spec": "chara_card_v2", "data": {"name": "Eve", "description": "x", '
            b'"extensions": {"deep": ' + b"[" * inner + b"]" * inner + b"}}}")


HOSTILE = {
    "decompression bomb, Pillow's bound": (
        png(100_000, 100_000, before=card_chunk()), "declares more than"),
    "decompression bomb, ours": (
        png(4097, 4096, before=card_chunk()), f"at most {MAX_PIXELS} are taken"),
    "compressed text chunk that inflates past the bound": (
        png(before=chunk(b"zTXt", b"chara\x00\x00" + zlib.compress(b"Q" * 20_000_000, 9))),
        "a chunk of the file is too large"),
    "a chunk longer than the file": (
        png()[:33] + struct.pack(">I", 0x7FFFFFFF) + b"tEXtchara\x00eyJ", "the file is broken"),
    "image data that is no zlib stream": (
        png(idat=b"no zlib here", after=card_chunk()), "the PNG cannot be read"),
    "chunk that is not base64": (
        png(before=text("chara", b"eyJuYW1lIjoi*&^%")), "chara chunk is not valid base64"),
    "base64 cut short": (
        png(before=text("ccv3", base64.b64encode(json.dumps(CARD).encode())[:-3])),
        "ccv3 chunk is not valid base64"),
    "chunk whose base64 holds no JSON": (
        png(before=text("chara", base64.b64encode(b"\x89PNG garbage"))),
        "neither a PNG nor UTF-8 JSON"),
    "JSON nested without end": (b"[" * 200_000 + b"]" * 200_000,
                                f"nests deeper than {MAX_DEPTH} levels"),
    "JSON nested without end inside a PNG": (
        png(before=text("chara", base64.b64encode(b"[" * 50_000 + b"]" * 50_000))),
        f"chara chunk nests deeper than {MAX_DEPTH} levels"),
    "JSON nested one level too deep": (nested(MAX_DEPTH + 1), "nests deeper than"),
    "NaN": (json.dumps({**CARD, "data": {**CARD["data"], "extensions": {"x": float("nan")}}}
                       ).encode(), "NaN is no JSON number"),
    "a number out of range": (nested(4).replace(b"[]", b"1e999"), "1e999 is out of range"),
    "an integer of 5000 digits": (nested(4).replace(b"[]", b"9" * 5000), "not valid JSON"),
}


@pytest.mark.parametrize("raw, problem", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_card_is_refused_naming_the_problem(raw, problem):
    with pytest.raises(CardError, match=problem):
        read_card(raw)


@pytest.mark.parametrize("raw, problem", HOSTILE.values(), ids=HOSTILE.keys())
async def test_the_api_answers_a_hostile_card_in_the_error_shape_and_stores_nothing(
        client, data_dir: Path, raw, problem):
    response = await client.post("/api/characters/import", data=raw, headers=AUTH)
    assert response.status == 400
    body = await response.json()
    assert set(body) == {"error"} and body["error"]["code"] == "invalid_card"
    assert re.search(problem, body["error"]["message"])
    assert not (data_dir / "characters" / "users").exists() or \
        not any((data_dir / "characters" / "users").rglob("*"))


async def test_a_bomb_as_a_picture_upload_is_refused_and_the_old_picture_kept(client, data_dir):
    created = await client.post("/api/characters", headers=AUTH, json={
        "name": "Eve", "language": "en", "persona": "A test."})
    assert created.status == 201, await created.text()
    cid = (await created.json())["id"]
    good = await client.put(f"/api/characters/{cid}/picture", data=png(8, 8), headers=AUTH)
    assert good.status == 200, await good.text()
    folder = data_dir / "characters" / "users" / "local"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert f"{cid}.png" in before
    for raw in (png(100_000, 100_000), png(6000, 6000)):
        response = await client.put(f"/api/characters/{cid}/picture", data=raw, headers=AUTH)
        assert response.status == 400
        error = (await response.json())["error"]
        assert error["code"] == "invalid_picture" and "pixels" in error["message"]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_card_icon_that_is_a_bomb_is_left_out_with_a_warning():
    bomb = base64.b64encode(png(100_000, 100_000)).decode()
    card = {"spec": "chara_card_v3", "spec_version": "3.0", "data": {
        **CARD["data"], "assets": [{"type": "icon", "name": "main", "ext": "png",
                                    "uri": f"data:image/png;base64,{bomb}"}]}}
    imported = read_card(json.dumps(card).encode())
    assert imported.picture is None
    assert any("declares more than" in w for w in imported.warnings)


@settings(max_examples=25, deadline=None)
@given(depth=st.integers(4, 3 * MAX_DEPTH))
def test_nesting_up_to_the_bound_is_taken_and_beyond_it_refused(depth):
    if depth <= MAX_DEPTH:
        imported = read_card(nested(depth))
        assert "deep" in imported.card["extensions"]
    else:
        with pytest.raises(CardError, match=f"nests deeper than {MAX_DEPTH} levels"):
            read_card(nested(depth))


def test_a_png_of_many_other_text_chunks_gets_one_short_warning():
    others = b"".join(text(f"note{i:04d}", b"x") for i in range(500))
    imported = read_card(png(before=others + card_chunk()))
    [warning] = imported.warnings
    assert warning == ("the PNG's other text chunks were not kept: "
                       + ", ".join(f"note{i:04d}" for i in range(10)) + " and 490 more")


async def test_a_lorebook_beyond_the_entry_bound_is_refused_by_the_api_with_nothing_written(
        client, data_dir: Path):
    entries = [{"keys": [f"k{i}"], "content": "x"} for i in range(MAX_ENTRIES + 1)]
    card = {**CARD, "data": {**CARD["data"], "character_book": {"entries": entries}}}
    response = await client.post("/api/characters/import", data=json.dumps(card), headers=AUTH)
    assert response.status == 400
    error = (await response.json())["error"]
    assert error["code"] == "invalid_character"
    assert f"at most {MAX_ENTRIES} are taken" in error["message"]
    assert not any((data_dir / "characters").rglob("*.toml"))
