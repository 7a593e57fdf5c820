"""Journal costs on the CPU (issue 13), with the fake model at zero latency.

    .venv/bin/python bench/journal.py [--iterations 200] [--only month]

- Validation + artifact: `stages.check` for a 500-message day (250 user lines, each with its
  assistant line before it) and a valid model answer, as the gateway's schema validation
  read it: the validator (with the answer's unknown keys) and the artifact. Target p50 <=
  20 ms.
- Generation overhead for a 40-message day: a whole job (budget, stage 1 with schema
  validation, validator, artifact, stage 2, the draft and its refs written through the one
  writer, every job state written) against the zero-latency fake model over HTTP, minus the
  floor: the same two chat requests sent directly with aiohttp. Target p50 <= 30 ms.
- Listing 3 years of days: `GET /api/journal/days`' query over 1 100 days (10 chat messages a
  day, an entry and a draft on every day). Target p50 <= 50 ms.
- The month view (issue 22): what the page asks when the journal opens on a month — the
  month (`GET /api/journal/months/{month}`), its newest day (`GET /api/journal/days/
  {date}`: conversations, entry with versions and photos, drafts) and the thumbnail of
  every day with photos in the calendar — through the real app over HTTP, in a year with
  365 entries (each with a draft and two versions; 20 chat messages a day) and 2 000
  photos (added through `MediaStore.add_media`, decoded and thumbnailed as an upload is).
  Target p50 <= 200 ms for all of it together; the floor beside it is as many requests
  to `GET /api/me` in the same run (the HTTP and auth cost of the requests alone).

Printed: p50/p99 in milliseconds per figure, and whether it holds its target.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import io
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import msgspec
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.core.settings import defaults  # noqa: E402
from app.journal.artifact import fallback_artifact  # noqa: E402
from app.journal.day import Conversation, DayMessage, number_sources  # noqa: E402
from app.profiles.interaction.store import InteractionStore  # noqa: E402
from app.journal.jobs import JournalJobs  # noqa: E402
from app.journal.media import MediaStore  # noqa: E402
from app.profiles.writing.service import ProfileService  # noqa: E402
from app.profiles.writing.store import ProfileStore  # noqa: E402
from app.journal.schema import Reconstruction  # noqa: E402
from app.journal.stages import check  # noqa: E402
from app.journal.store import ImportedMessage, JournalStore  # noqa: E402
from app.journal.trace import DraftTrace  # noqa: E402
from app.llm import Gateway  # noqa: E402
from app.llm.privacy import IdentityRegistry  # noqa: E402
from app.storage.database import Database  # noqa: E402
from bench.percentiles import p50_p99, percentile  # noqa: E402
from tests.fakemodel import FakeModel  # noqa: E402

USER = "local"
PHOTOS = 2000


def report(name: str, samples: list[float], target: float) -> None:
    p50, p99 = p50_p99(samples)
    verdict = "ok" if p50 <= target else "MISSED"
    print(f"{name:<44} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  "
          f"target p50 <= {target:g} ms  {verdict}")


def day_lines(messages: int) -> list[tuple[str, str]]:
    lines = []
    for index in range(messages // 2):
        lines.append(("assistant", f"Wie ging es weiter nach Punkt {index}? Erzähl mehr."))
        lines.append(("user", f"Um {index % 24}:{index % 60:02d} Uhr habe ich Punkt {index} "
                              f"erledigt, danach kurz Pause gemacht und Tee getrunken."))
    return lines


def reconstruction(sources) -> dict:
    users = [s for s in sources if s.role == "user"]
    return {"source_order": [s.source_id for s in users],
            "chronology": [{"source_id": s.source_id, "source": "user", "time": None,
                            "claims": [{"kind": "event", "evidence": "Tee getrunken"}]}
                           for s in users],
            "uncertainties": [], "contradictions": [], "plan_changes": [], "corrections": []}


def bench_validation(iterations: int) -> None:
    messages = [DayMessage(f"m{i}", role, text, None) for i, (role, text) in
                enumerate(day_lines(500))]
    sources = number_sources([Conversation("c", "import", None, messages)])
    text = json.dumps(reconstruction(sources))
    answer = msgspec.json.decode(text, type=Reconstruction)  # the gateway's part
    fallback = fallback_artifact(sources)
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        codes, _ = check(sources, answer, text, fallback)
        samples.append((time.perf_counter() - started) * 1000)
    assert codes == [], codes
    report("validation + artifact, 500-message day", samples, 20)


async def bench_generation(iterations: int, directory: Path) -> None:
    fake = await FakeModel(context_length=32768).start()
    model = fake.overrides(llm_context=32768)
    model.pop("model_backoff_seconds")  # retries as in the app
    settings = defaults(data_dir=str(directory), **model)
    db = Database(directory / "generation.sqlite3")
    await db.open()
    store = JournalStore(db)
    lines = day_lines(40)
    await store.import_conversation(USER, "2026-03-01", [ImportedMessage(r, t, None)
                                                        for r, t in lines])
    conversations = await store.conversations(USER, "2026-03-01")
    sources = number_sources(conversations)
    fake.always("journal_reconstruct", reconstruction(sources))
    fake.always("journal_generate", "Ich habe viel erledigt und Tee getrunken.")
    gateway = await Gateway(settings).start()
    profiles = ProfileService(ProfileStore(db), settings, IdentityRegistry(db), InteractionStore(db))
    jobs = JournalJobs(store, profiles, gateway, settings, publish=None)
    overhead, floors = [], []
    async with aiohttp.ClientSession() as session:
        for _ in range(iterations):
            fake.requests.clear()
            started = time.perf_counter()
            job_id = await jobs.start(USER, "2026-03-01", conversations)
            await jobs.wait(job_id)
            job_ms = (time.perf_counter() - started) * 1000
            job = await store.job(USER, job_id)
            assert job["state"] == "done", job
            bodies = [r.body for r in fake.chats()]
            started = time.perf_counter()
            for body in bodies:  # the floor: the same requests, straight to the server
                async with session.post(f"{fake.url}/v1/chat/completions", json=body,
                                        headers={"X-Novaberg-Purpose": "floor"}) as response:
                    json.loads(await response.read())
            floor_ms = (time.perf_counter() - started) * 1000
            floors.append(floor_ms)
            overhead.append(job_ms - floor_ms)
    await gateway.aclose()
    await db.close()
    await fake.close()
    report("generation overhead, 40-message day", overhead, 30)
    p50 = percentile(floors, 0.5)
    print(f"{'  (floor: the two model requests alone)':<44} p50 {p50:7.2f} ms")


TRACE = DraftTrace(provider="offline", model=None, window_source="provider", window=32768,
                   margin=0.15, margin_tokens=4916, reserved_output=4096,
                   estimated_input=[100, 100])


async def fill_chat(db: Database, first: dt.date, days: int, per_day: int,
                    text: Callable[[int], str]) -> list[str]:
    """`per_day` chat messages (user and character by turns) on each of `days` days from
    `first`, straight into the message log; the dates."""
    dates = [(first + dt.timedelta(days=n)).isoformat() for n in range(days)]
    start = dt.datetime.combine(first, dt.time(8), dt.UTC).timestamp()

    def fill(conn) -> None:
        rows = [(f"{date}-{k}", USER, "nova", f"t{n}-{k // 2}", "[]",
                 "user" if k % 2 == 0 else "assistant", "reply", text(k),
                 start + n * 86400 + k * 60, date)
                for n, date in enumerate(dates) for k in range(per_day)]
        conn.executemany("INSERT INTO messages (entry_key, user_id, character_id, turn_id, "
                         "message_ids, role, origin, text, created, calendar_date) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    await db.execute_write_fn(fill)
    return dates


async def bench_listing(iterations: int, directory: Path) -> None:
    db = Database(directory / "listing.sqlite3")
    await db.open()
    store = JournalStore(db)
    dates = await fill_chat(db, dt.date(2023, 1, 1), 1100, 10, lambda k: f"Zeile {k}")
    for date in dates:
        await store.save_draft(USER, date, text="Ein Tag.", reconstruction_status="valid",
                               narration="model", validation=[], trace=TRACE, sources=[])
        await store.create_entry(USER, date, "Ein Tag.", None)
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        days = await store.days(USER)
        samples.append((time.perf_counter() - started) * 1000)
    assert len(days) == 1100 and days[0]["entry_id"] and days[0]["messages"] == 10
    await db.close()
    report("listing 1 100 days", samples, 50)


async def bench_month(iterations: int, directory: Path) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from app.wiring.server import DATABASE_FILE, create_app

    data = directory / "month"
    data.mkdir()
    db = Database(data / DATABASE_FILE)
    await db.open()
    store = JournalStore(db)
    entries: list[str] = []
    dates = await fill_chat(db, dt.date(2026, 1, 1), 365, 20,
                            lambda k: f"Zeile {k} des Tages, mit etwas Text darin.")
    for date in dates:
        sources = number_sources(await store.conversations(USER, date))
        draft_id = await store.save_draft(
            USER, date, text="Ein Tag, wie er war.", reconstruction_status="valid",
            narration="model", validation=[], trace=TRACE,
            sources=[s for s in sources if s.role == "user"])
        entry_id = await store.create_entry(USER, date, "Ein Tag, wie er war.", draft_id)
        await store.edit_entry(USER, entry_id, "Ein Tag, wie er war. Von Hand ergänzt.")
        entries.append(entry_id)
    settings = defaults(data_dir=str(data), llm_provider="offline", backup_daily=False,
                        redis_appendfsync="no")
    media = MediaStore(db, settings)
    photo = small_jpeg()
    for n in range(PHOTOS):
        await media.add_media(USER, entries[n % len(entries)], f"Foto {n}.jpg", photo)
    await db.close()

    token = "bench-token-0123456789"
    auth = {"Authorization": f"Bearer {token}"}
    samples, floor = [], []
    async with TestClient(TestServer(create_app(settings, local_token=token))) as client:
        for n in range(iterations):
            month = f"2026-{n % 12 + 1:02d}"
            started = time.perf_counter()
            async with client.get(f"/api/journal/months/{month}", headers=auth) as response:
                days = (await response.json())["days"]
            async with client.get(f"/api/journal/days/{days[-1]['date']}",
                                  headers=auth) as response:
                day = await response.json()
            thumbs = [d["photo"] for d in days if d["photo"]]
            for url in thumbs:
                async with client.get(url, headers=auth) as response:
                    assert response.status == 200 and await response.read()
            samples.append((time.perf_counter() - started) * 1000)
            assert len(days) >= 28 and all(d["entry_id"] for d in days), days[:2]
            assert len(day["entry"]["versions"]) == 2 and day["conversations"]
            assert len(thumbs) == len(days) and len(day["entry"]["media"]) >= 5
            started = time.perf_counter()
            for _ in range(2 + len(thumbs)):
                async with client.get("/api/me", headers=auth) as response:
                    await response.read()
            floor.append((time.perf_counter() - started) * 1000)
    report(f"month view, 365 entries, {PHOTOS} photos", samples, 200)
    p50, p99 = p50_p99(floor)
    print(f"{'  floor: as many GET /api/me':<44} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms")


def small_jpeg() -> bytes:
    """A phone-like photo, small: a bench of the month view, not of Pillow."""
    out = io.BytesIO()
    Image.effect_noise((640, 480), 40).convert("RGB").save(out, format="JPEG", quality=80)
    return out.getvalue()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--only", choices=("month",), help="run that figure alone")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # the figures, not the per-call log lines
    if args.only == "month":
        with tempfile.TemporaryDirectory() as tmp:
            await bench_month(max(24, args.iterations // 4), Path(tmp))
        return
    bench_validation(args.iterations)
    with tempfile.TemporaryDirectory() as tmp:
        await bench_generation(max(20, args.iterations // 4), Path(tmp))
        await bench_listing(max(20, args.iterations // 4), Path(tmp))
        await bench_month(max(24, args.iterations // 4), Path(tmp))


if __name__ == "__main__":
    asyncio.run(main())
