"""Writes the PNG cards of this folder from its JSON cards (run once; the PNGs are committed).

- `lena-v2.png`: the V2 card in a `chara` chunk placed after the image data, before IEND —
  where SillyTavern's exporter puts it;
- `kapitaen-v3.png`: the V3 card in a `ccv3` chunk, a V2 backfill in `chara` (as V3 tools
  write both) and an embedded asset chunk `chara-ext-asset_:…`, all before the image data —
  where Pillow puts text chunks.

    .venv/bin/python tests/data/cards/make_pngs.py
"""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib
from pathlib import Path

from PIL import Image, ImageDraw, PngImagePlugin

HERE = Path(__file__).parent


def portrait(colour: tuple[int, int, int], accent: tuple[int, int, int]) -> Image.Image:
    image = Image.new("RGB", (256, 384), colour)
    draw = ImageDraw.Draw(image)
    draw.ellipse((68, 60, 188, 180), fill=accent)            # a head
    draw.rounded_rectangle((48, 200, 208, 384), 40, fill=accent)  # shoulders
    return image


def b64(document: dict) -> str:
    return base64.b64encode(json.dumps(document, ensure_ascii=False).encode()).decode()


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def lena() -> None:
    card = json.loads((HERE / "lena-v2.json").read_text(encoding="utf-8"))
    out = io.BytesIO()
    portrait((212, 180, 150), (120, 72, 48)).save(out, format="PNG")
    png = out.getvalue()
    iend = png.rindex(b"IEND") - 4
    text = chunk(b"tEXt", b"chara\0" + b64(card).encode("ascii"))
    (HERE / "lena-v2.png").write_bytes(png[:iend] + text + png[iend:])


def kapitaen() -> None:
    card = json.loads((HERE / "kapitaen-v3.json").read_text(encoding="utf-8"))
    backfill = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        **{k: v for k, v in card["data"].items() if k not in ("assets", "nickname", "source")},
        "creator_notes": "This character card is Character Card V3, but it is loaded as a "
                         "Character Card V2. Please use a Character Card V3 compatible "
                         "application to use this character card properly."}}
    info = PngImagePlugin.PngInfo()
    info.add_text("chara", b64(backfill))
    info.add_text("ccv3", b64(card))
    info.add_text("chara-ext-asset_:hallig.webp", base64.b64encode(b"RIFF....WEBP").decode())
    portrait((70, 110, 150), (230, 220, 200)).save(HERE / "kapitaen-v3.png", format="PNG",
                                                   pnginfo=info)


if __name__ == "__main__":
    lena()
    kapitaen()
