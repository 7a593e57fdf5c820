"""Photos in journal entries (issue 22 §4) through the real server: real SQLite, the data
dir's files, Pillow decoding what comes in; the fake model server for what a generation sends."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from aiohttp import FormData
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from app.journal.location import GPS_IFD
from app.journal.media import MEDIA_FOLDER, MediaRefused, checked_name, user_folder
from app.wiring.server import create_app
from tests.accounts import add_user
from tests.conftest import AUTH, TOKEN
from tests.journal.test_api import (  # noqa: F401 — jclient, journal_app: fixtures
    call,
    generate,
    import_day,
    jclient,
    journal_app,
)

DATE = "2026-03-01"
MAKE = 0x010F  # EXIF camera maker: kept when the location goes


def image_bytes(fmt: str, size: tuple[int, int] = (640, 480), *, gps: bool = False,
                mode: str = "RGB") -> bytes:
    image = Image.new(mode, size, "teal")
    exif = Image.Exif()
    exif[MAKE] = "Novaberg Cam"
    if gps:
        exif[GPS_IFD] = {1: "N", 2: (52.0, 31.0, 12.0), 3: "E", 4: (13.0, 24.0, 36.0)}
    out = io.BytesIO()
    image.save(out, format=fmt, exif=exif.tobytes())
    return out.getvalue()


async def new_entry(client: Any, date: str = DATE, text: str = "Ein Tag am See.",
                    headers: dict[str, str] | None = None) -> dict[str, Any]:
    return await call(client, "POST", "/api/journal/entries", 201, headers=headers,
                      json={"date": date, "text": text})


async def upload(client: Any, entry_id: str, data: bytes, name: str = "see.jpg",
                 status: int = 201, headers: dict[str, str] | None = None) -> Any:
    return await call(client, "POST", f"/api/journal/entries/{entry_id}/media", status,
                      headers=headers, params={"name": name}, data=data)


def stored_files(data_dir: Path) -> list[Path]:
    return sorted(p for p in (data_dir / MEDIA_FOLDER).rglob("*") if p.is_file())


@pytest.fixture
def media_rows(in_store: Any) -> Any:
    """`media_rows()`: how many photos the store holds, on the test's engine."""
    def count() -> int:
        with in_store() as conn:
            return conn.execute("SELECT COUNT(*) FROM media_assets").fetchone()[0]

    return count


@pytest.mark.parametrize(("fmt", "kind", "content_type"), [
    ("JPEG", "jpeg", "image/jpeg"), ("PNG", "png", "image/png"),
    ("WEBP", "webp", "image/webp"), ("HEIF", "heic", "image/heic")])
async def test_each_kind_is_stored_listed_and_served_to_its_owner(client, data_dir, fmt, kind,
                                                                  content_type):
    entry = await new_entry(client)
    raw = image_bytes(fmt)
    asset = await upload(client, entry["entry_id"], raw, name=f"see.{kind}")
    assert (asset["kind"], asset["width"], asset["height"]) == (kind, 640, 480)
    assert "file" not in asset and str(data_dir) not in json.dumps(asset)

    response = await client.get(asset["url"], headers=AUTH)
    assert response.status == 200 and response.content_type == content_type
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "private" in response.headers["Cache-Control"]
    assert await response.read() == raw  # no location: the file as it came
    thumb = await client.get(asset["thumb_url"], headers=AUTH)
    assert thumb.content_type == "image/webp"
    small = Image.open(io.BytesIO(await thumb.read()))
    assert small.format == "WEBP" and max(small.size) == 320

    shown = await call(client, "GET", f"/api/journal/entries/{entry['entry_id']}")
    assert [m["asset_id"] for m in shown["media"]] == [asset["asset_id"]]
    month = await call(client, "GET", "/api/journal/months/2026-03")
    [day] = month["days"]
    assert (day["photos"], day["photo"]) == (1, asset["thumb_url"])
    [stored, thumb_file] = stored_files(data_dir)
    assert stored.parent.name == user_folder("local") and stored.stat().st_mode & 0o077 == 0


async def test_the_kind_is_what_the_bytes_decode_to_not_the_name(client):
    entry = await new_entry(client)
    asset = await upload(client, entry["entry_id"], image_bytes("PNG"), name="urlaub.jpg")
    assert asset["kind"] == "png"
    response = await client.get(asset["url"], headers=AUTH)
    assert response.content_type == "image/png"


async def test_a_multipart_upload_takes_the_forms_file_name(client):
    entry = await new_entry(client)
    form = FormData()
    form.add_field("file", image_bytes("JPEG"), filename="Frühstück am See.jpg",
                   content_type="image/jpeg")
    asset = await call(client, "POST", f"/api/journal/entries/{entry['entry_id']}/media", 201,
                       data=form)
    assert asset["name"] == "Frühstück am See.jpg"
    again = await upload(client, entry["entry_id"], image_bytes("JPEG"),
                         name="Frühstück am See.jpg")
    assert again["name"] == "Frühstück am See (2).jpg"  # one folder per entry in exports


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "HEIF"])
async def test_the_location_goes_by_default_and_the_rest_of_exif_stays(client, fmt):
    entry = await new_entry(client)
    raw = image_bytes(fmt, gps=True)
    assert GPS_IFD in Image.open(io.BytesIO(raw)).getexif()
    asset = await upload(client, entry["entry_id"], raw, name=f"ort.{fmt.lower()}")
    body = await (await client.get(asset["url"], headers=AUTH)).read()
    stored = Image.open(io.BytesIO(body))
    exif = stored.getexif()
    assert GPS_IFD not in exif and exif[MAKE] == "Novaberg Cam"
    assert stored.format == fmt and stored.size == (640, 480) and asset["bytes"] == len(body)


async def test_the_setting_keeps_the_location(aiohttp_client, make_settings):
    client = await aiohttp_client(create_app(make_settings(media_keep_location=True),
                                             local_token=TOKEN))
    entry = await new_entry(client)
    raw = image_bytes("PNG", gps=True)
    asset = await upload(client, entry["entry_id"], raw, name="ort.png")
    assert await (await client.get(asset["url"], headers=AUTH)).read() == raw


def _truncated_jpeg() -> bytes:
    """A JPEG whose header is whole and whose picture data stops half-way."""
    out = io.BytesIO()
    Image.effect_noise((400, 300), 60).convert("RGB").save(out, format="JPEG")
    return out.getvalue()[:len(out.getvalue()) // 2]


BAD_UPLOADS = [
    pytest.param(b"just some text, not a photo", "notiz.jpg", 400, "not_an_image", id="text"),
    pytest.param(b"", "leer.jpg", 400, "empty_upload", id="empty"),
    pytest.param(_truncated_jpeg(), "halb.jpg", 400, "invalid_image", id="truncated"),
    pytest.param(image_bytes("JPEG")[:300], "kopf.jpg", 400, "not_an_image", id="header"),
    pytest.param(image_bytes("GIF"), "anim.gif", 415, "kind_not_allowed", id="gif"),
    pytest.param(image_bytes("BMP"), "alt.bmp", 415, "kind_not_allowed", id="bmp"),
    pytest.param(image_bytes("JPEG"), "../../etc/passwd.jpg", 400, "invalid_name", id="dots"),
    pytest.param(image_bytes("JPEG"), "ordner/see.jpg", 400, "invalid_name", id="folder"),
    pytest.param(image_bytes("JPEG"), "ordner\\see.jpg", 400, "invalid_name", id="backslash"),
    pytest.param(image_bytes("JPEG"), ".versteckt.jpg", 400, "invalid_name", id="hidden"),
    pytest.param(image_bytes("JPEG"), "see\x00.jpg", 400, "invalid_name", id="nul"),
    pytest.param(image_bytes("JPEG"), "see\u202egpj.exe", 400, "invalid_name", id="bidi"),
    pytest.param(image_bytes("JPEG"), "x" * 200 + ".jpg", 400, "invalid_name", id="long"),
]


@pytest.mark.parametrize(("data", "name", "status", "code"), BAD_UPLOADS)
async def test_a_refused_upload_writes_nothing(client, data_dir, media_rows, data, name, status,
                                               code):
    entry = await new_entry(client)
    answer = await upload(client, entry["entry_id"], data, name=name, status=status)
    assert answer["error"]["code"] == code and answer["error"]["message"]
    assert stored_files(data_dir) == [] and media_rows() == 0


async def test_a_photo_over_media_max_bytes_is_refused_as_it_comes(aiohttp_client,
                                                                   make_settings, media_rows):
    settings = make_settings(media_max_bytes=4096)
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    entry = await new_entry(client)
    big = image_bytes("PNG", (900, 900), mode="RGB")
    noise = Image.effect_noise((300, 300), 80).convert("RGB")
    out = io.BytesIO()
    noise.save(out, format="PNG")
    for data in (big + b"\0" * 5000, out.getvalue()):
        answer = await upload(client, entry["entry_id"], data, status=413)
        assert answer["error"]["code"] == "too_large"
        assert "media_max_bytes" in answer["error"]["message"]
    assert stored_files(settings.data_path) == [] and media_rows() == 0


async def test_an_unknown_or_deleted_entry_takes_no_photo(client, data_dir, media_rows):
    answer = await upload(client, "entry_nope", image_bytes("JPEG"), status=404)
    assert answer["error"]["code"] == "not_found"
    entry = await new_entry(client)
    await call(client, "DELETE", f"/api/journal/entries/{entry['entry_id']}", 204)
    answer = await upload(client, entry["entry_id"], image_bytes("JPEG"), status=409)
    assert answer["error"]["code"] == "entry_deleted"
    assert stored_files(data_dir) == [] and media_rows() == 0


async def test_another_users_photos_and_entries_are_not_found(client, data_dir, settings,
                                                              media_rows):
    anna = {"Authorization": f"Bearer {add_user(settings, 'anna')}"}
    entry = await new_entry(client)
    asset = await upload(client, entry["entry_id"], image_bytes("JPEG"))
    for method, path in [("GET", asset["url"]), ("GET", asset["thumb_url"]),
                         ("DELETE", asset["url"])]:
        answer = await call(client, method, path, 404, headers=anna)
        assert answer["error"]["code"] == "not_found", (method, path)
    answer = await upload(client, entry["entry_id"], image_bytes("JPEG"), headers=anna,
                          status=404)
    assert answer["error"]["code"] == "not_found"
    assert len(stored_files(data_dir)) == 2 and media_rows() == 1
    assert (await client.get(asset["url"], headers=AUTH)).status == 200


async def test_a_deleted_photo_and_a_purged_entry_leave_no_file(client, data_dir, media_rows):
    entry = await new_entry(client)
    first = await upload(client, entry["entry_id"], image_bytes("JPEG"), name="a.jpg")
    await upload(client, entry["entry_id"], image_bytes("PNG"), name="b.png")
    await call(client, "DELETE", first["url"], 204)
    assert (await client.get(first["url"], headers=AUTH)).status == 404
    assert len(stored_files(data_dir)) == 2 and media_rows() == 1

    await call(client, "DELETE", f"/api/journal/entries/{entry['entry_id']}", 204)
    # In the trash the photos stay (undelete brings the entry back whole) …
    assert len(stored_files(data_dir)) == 2
    await call(client, "DELETE", f"/api/journal/trash/{entry['entry_id']}", 204)
    # … purged, they are gone from disk and from the database.
    assert stored_files(data_dir) == [] and media_rows() == 0


async def test_the_per_entry_export_puts_photos_in_a_folder_per_entry(client):
    entry = await new_entry(client)
    raw = image_bytes("JPEG")
    await upload(client, entry["entry_id"], raw, name="Ufer am Morgen.jpg")
    await new_entry(client, date="2026-03-02", text="Ohne Bild.")
    response = await client.get("/api/exports/journal?format=md&per=entry", headers=AUTH)
    assert response.headers.get("Transfer-Encoding") == "chunked"  # streamed, photos too
    archive = zipfile.ZipFile(io.BytesIO(await response.read()))
    assert sorted(archive.namelist()) == [f"{DATE}.md", f"{DATE}/Ufer am Morgen.jpg",
                                          "2026-03-02.md"]
    assert archive.read(f"{DATE}/Ufer am Morgen.jpg") == raw
    # A photo is already compressed: stored as it is; the texts are deflated.
    assert archive.getinfo(f"{DATE}/Ufer am Morgen.jpg").compress_type == zipfile.ZIP_STORED
    assert archive.getinfo(f"{DATE}.md").compress_type == zipfile.ZIP_DEFLATED
    assert f"![Ufer am Morgen.jpg](<{DATE}/Ufer am Morgen.jpg>)" in \
        archive.read(f"{DATE}.md").decode()
    response = await client.get("/api/exports/journal?format=json&per=entry", headers=AUTH)
    archive = zipfile.ZipFile(io.BytesIO(await response.read()))
    assert archive.read(f"{DATE}/Ufer am Morgen.jpg") == raw
    document = json.loads(archive.read(f"{DATE}.json"))
    [item] = document["entries"][0]["media"]
    assert item["name"] == "Ufer am Morgen.jpg" and item["kind"] == "jpeg"


async def test_a_generation_sends_no_photo_to_the_model(jclient, fake_model, data_dir):
    await import_day(jclient)
    entry = await new_entry(jclient, text="Am See. Um 6:00 Uhr aufgestanden.")
    raw = image_bytes("JPEG", gps=True)
    asset = await upload(jclient, entry["entry_id"], raw, name="geheim.jpg")
    fake_model.requests.clear()
    job = await generate(jclient, include_existing=True)
    assert job["state"] == "done" and fake_model.requests
    stored = stored_files(data_dir)
    # The entry's text was the base of the draft (so the photo had its chance to come along).
    assert any("Am See" in json.dumps(r.body, ensure_ascii=False) for r in fake_model.requests)
    for request in fake_model.requests:
        sent = json.dumps(request.body, ensure_ascii=False)
        assert asset["asset_id"] not in sent and "geheim" not in sent
        assert MEDIA_FOLDER + "/" not in sent and "image_url" not in sent
        assert not any(str(path) in sent or path.name in sent for path in stored)
        assert "/9j/" not in sent  # a JPEG's start in base64


@given(st.text(max_size=40))
def test_a_taken_name_is_a_plain_file_name(raw):
    try:
        name = checked_name(raw)
    except MediaRefused as exc:
        assert exc.code == "invalid_name"
        return
    assert "/" not in name and "\\" not in name and not name.startswith((".", " "))
    assert name not in (".", "..") and all(c.isprintable() for c in name)
    assert Path(name).name == name


async def test_the_cli_exports_an_entrys_photos_into_its_folder(aiohttp_client, settings,
                                                                tmp_path):
    from app.wiring.cli import main

    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    entry = await new_entry(client)
    raw = image_bytes("WEBP")
    await upload(client, entry["entry_id"], raw, name="Steg.webp")
    await client.close()
    out = tmp_path / "export"
    out.mkdir()
    assert main(["--data-dir", str(settings.data_path), "export", "journal", "--format", "md",
                 "--out", str(out)]) == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == \
        [f"{DATE}.md", f"{DATE}/Steg.webp"]
    assert (out / DATE / "Steg.webp").read_bytes() == raw
    assert f"![Steg.webp](<{DATE}/Steg.webp>)" in (out / f"{DATE}.md").read_text()
    assert (out / DATE / "Steg.webp").stat().st_mode & 0o777 == 0o600
    assert (out / DATE).stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("planted", ["photo", "folder"])
async def test_the_cli_writes_no_photo_through_a_link(aiohttp_client, settings, tmp_path,
                                                      capsys, planted):
    """A link where the photo (or its entry's folder) goes is refused; what it points at
    stays as it was."""
    from app.wiring.cli import main

    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    entry = await new_entry(client)
    await upload(client, entry["entry_id"], image_bytes("PNG"), name="Steg.png")
    await client.close()
    out, elsewhere = tmp_path / "export", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    victim = elsewhere / "Steg.png"
    victim.write_text("keep me")
    if planted == "photo":
        (out / DATE).mkdir()
        (out / DATE / "Steg.png").symlink_to(victim)
    else:
        (out / DATE).symlink_to(elsewhere)
    capsys.readouterr()
    assert main(["--data-dir", str(settings.data_path), "export", "journal", "--format", "md",
                 "--out", str(out)]) == 2
    assert "link" in capsys.readouterr().err
    assert victim.read_text() == "keep me" and sorted(p.name for p in elsewhere.iterdir()) == \
        ["Steg.png"]


def test_an_importer_adds_a_photo_in_its_own_transaction(settings):
    """`add_media_sync` on an importer's connection: the photo with the entry it imports, or
    — the importer's transaction rolled back — neither row nor file (`asset.files`)."""
    from app.journal.media import add_media_sync, remove_files
    from app.journal.rows import append_version, ensure_day, new_id
    from app.storage.migrations import apply_migrations
    from tests.store import store_connection

    settings.data_path.mkdir(parents=True, exist_ok=True)
    conn = store_connection(settings)
    apply_migrations(conn)

    def imported_entry(date: str) -> str:
        entry_id = new_id("entry")
        conn.execute("INSERT INTO journal_entries (entry_id, journal_day_id, created_at) "
                     "VALUES (?, ?, 0)", (entry_id, ensure_day(conn, "local", date)))
        append_version(conn, entry_id, "edit", "Aus dem alten Tagebuch.", [])
        return entry_id

    with conn:
        kept = add_media_sync(conn, settings, "local", imported_entry(DATE), "alt.jpg",
                              image_bytes("JPEG"))
    assert [settings.data_path / f for f in kept.files] == stored_files(settings.data_path)
    try:
        with conn:
            dropped = add_media_sync(conn, settings, "local", imported_entry("2026-03-02"),
                                     "neu.png", image_bytes("PNG"))
            raise RuntimeError("the import's next entry is malformed")
    except RuntimeError:
        remove_files(settings.data_path, dropped.files)
    assert stored_files(settings.data_path) == [settings.data_path / f for f in kept.files]
    assert [tuple(r) for r in conn.execute("SELECT name FROM media_assets")] == [("alt.jpg",)]
    with pytest.raises(MediaRefused):
        with conn:
            add_media_sync(conn, settings, "local", kept.entry_id, "x/y.jpg", image_bytes("JPEG"))
    conn.close()
