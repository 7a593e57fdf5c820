"""Writing-profile costs on the CPU (issue 16), over 3 years of daily journal entries.

    .venv/bin/python bench/profile.py [--iterations 50]

- Brief: what every journal job adds before stage 2 — the compiled brief of a full profile
  with its two newest voiced entries read from SQLite. Target p50 <= 5 ms.
- Package: the `kansho.profile_analysis_package` (initial build) over the whole corpus,
  within `profile_package_chars` — an explicit user action; the SQLite reads run on the
  reader threads, not on the event loop. Target p50 <= 500 ms.
- Copy package: the same package masked by the privacy gateway (the user's registered people
  and the detectors) and checked by the egress gate. Target p50 <= 800 ms.
- Evidence at save: what the journal's save route adds (the save-time triggers over the
  entry and the user's usual writing). Target p50 <= 50 ms.
- Evidence: the first collection over 1 100 entries (half of them edited drafts, each
  measured once) and a repeat collection (everything stored already). Printed, no target for
  the first; the repeat p50 <= 200 ms.

Printed: p50/p99 in milliseconds per figure, and whether it holds its target.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.core.settings import defaults  # noqa: E402
from app.profiles.writing import model  # noqa: E402
from app.profiles.writing.model import Change  # noqa: E402
from app.profiles.interaction.store import InteractionStore  # noqa: E402
from app.profiles.writing.service import ProfileService  # noqa: E402
from app.profiles.writing.store import ProfileStore  # noqa: E402
from app.llm.privacy import IdentityRegistry  # noqa: E402
from app.storage.database import Database  # noqa: E402
from bench.percentiles import p50_p99  # noqa: E402

USER = "local"
WORDS = ("Morgens Fahrrad Markt Sauerteigbrot Suppe Nachbarin regnete leise ich wir und "
         "später Anna Garten Kaffee müde froh").split()
DAYS = 1100


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def fill(db_path: Path) -> None:
    """3 years of entries, each from a draft; every second one edited by the user."""
    import sqlite3
    rng = random.Random(7)
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO journal_spaces VALUES ('space', ?, 'user', 0)", (USER,))
    for i in range(DAYS):
        day = f"d{i}"
        conn.execute("INSERT INTO journal_days VALUES (?, 'space', ?, '{}', 0)",
                     (day, f"20{23 + i // 365}-{i % 365:03d}"))
        text = prose(rng, 400)
        final = text + (" und dann schrieb ich es anders" * 5 if i % 2 else "")
        conn.execute("INSERT INTO journal_drafts (draft_id, journal_day_id, text, status, "
                     "reconstruction_status, narration, validation_json, trace_json, "
                     "created_at) VALUES (?, ?, ?, 'current', 'valid', 'model', '[]', '{}', ?)",
                     (f"r{i}", day, text, float(i)))
        conn.execute("INSERT INTO journal_entries VALUES (?, ?, ?, ?, NULL)",
                     (f"e{i}", day, f"v{i}", float(i)))
        conn.execute("INSERT INTO journal_entry_versions VALUES (?, ?, 1, 'draft', ?, ?, ?)",
                     (f"v{i}", f"e{i}", final, f"r{i}", float(i)))
    conn.commit()
    conn.close()


async def timed(fn, iterations: int) -> list[float]:
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def report(name: str, samples: list[float], target: float | None) -> None:
    p50, p99 = p50_p99(samples)
    verdict = "" if target is None else (" OK" if p50 <= target else f" OVER {target} ms")
    print(f"{name:<34} p50 {p50:8.2f} ms   p99 {p99:8.2f} ms{verdict}")


async def main(iterations: int) -> None:
    logging.disable(logging.INFO)
    directory = Path(tempfile.mkdtemp(prefix="nb-bench-profile-"))
    db = Database(directory / "novaberg.sqlite3")
    await db.open()
    fill(db.path)
    settings = defaults(data_dir=str(directory))
    profiles = ProfileService(ProfileStore(db), settings, IdentityRegistry(db), InteractionStore(db))
    rng = random.Random(3)
    await profiles.edit(USER, [Change("update", "core", value=prose(rng, 300)),
                               Change("add", "facet", key=model.JOURNAL_FACET,
                                      value=prose(rng, 200)),
                               *(Change("add", key=f"trait {i}", value=prose(rng, 60))
                                 for i in range(12))], "bench")
    try:
        report("brief (per journal job)", await timed(
            lambda: profiles.journal_brief(USER), iterations), 5.0)
        report("package, initial build", await timed(
            lambda: profiles.package(USER, "initial_build"), max(3, iterations // 5)), 500.0)
        report("copy package, masked", await timed(
            lambda: profiles.copy_package(USER, "initial_build"), max(3, iterations // 5)),
            800.0)
        saved = iter(range(DAYS))
        report("evidence at save (per save)", await timed(
            lambda: profiles.on_entry_saved(USER, f"e{next(saved)}"), iterations), 50.0)
        first = await timed(lambda: profiles.collect_evidence(USER), 1)
        report("evidence, first collection", first, None)
        report("evidence, repeat collection", await timed(
            lambda: profiles.collect_evidence(USER), max(3, iterations // 5)), 200.0)
    finally:
        await db.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=50)
    asyncio.run(main(parser.parse_args().iterations))
