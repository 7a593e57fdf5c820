"""Lorebook selection per turn (app/characters/lore.py, issue 25): every entry of a
character's book is looked at on every turn, so its cost grows with the book.

    .venv/bin/python bench/lore.py [--turns 50]

Books of 50, 200 and 2 000
entries (`MAX_ENTRIES`, the most an import takes), three keys per entry — one set of
one-word keys (a look-up in the scanned texts' words), one of two-word keys (a look-up,
then a search of the text) — and recursive scanning on (an entry's 30 words name another
entry's key about once in two), against the last four texts of a conversation of 80 words
each that name about a tenth of the keys. Printed: p50/p99 per turn (wall clock) and the
CPU time of the scan itself, per turn and per entry — on a shared machine the wall clock
counts the waits for a core; print `cat /proc/loadavg` with the figures.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.characters.lore import MAX_ENTRIES, read_book, triggered  # noqa: E402
from bench.percentiles import p50_p99  # noqa: E402

SIZES = (50, 200, MAX_ENTRIES)


def make_book(size: int, words_per_key: int, rnd: random.Random) -> tuple[object, list[str]]:
    words = ["".join(rnd.choice(string.ascii_lowercase) for _ in range(7))
             for _ in range(size * 3 * words_per_key)]
    keys = [" ".join(words[i:i + words_per_key]) for i in range(0, len(words), words_per_key)]
    plain = ["".join(rnd.choice(string.ascii_lowercase) for _ in range(6)) for _ in range(500)]
    entries = [{"keys": keys[3 * i:3 * i + 3], "content": f"Entry {i}: " + " ".join(
        rnd.choice(keys) if rnd.random() < 0.02 else rnd.choice(plain) for _ in range(30)),
        "enabled": True, "insertion_order": i, "extensions": {}} for i in range(size)]
    book = read_book({"entries": entries, "recursive_scanning": True})
    named = rnd.sample(keys, max(1, len(keys) // 10))
    recent = [" ".join(rnd.choice(named + words[:200]) for _ in range(80)) for _ in range(4)]
    return book, recent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50)
    turns = parser.parse_args().turns
    rnd = random.Random(25)
    print(f"lorebook selection, {turns} turns per book, recursive scanning on")
    for words_per_key in (1, 2):
        for size in SIZES:
            book, recent = make_book(size, words_per_key, rnd)
            samples, cpu = [], []
            for _ in range(turns):
                started, started_cpu = time.perf_counter(), time.thread_time()
                chosen = triggered(book, recent, character_turns=3)
                samples.append(time.perf_counter() - started)
                cpu.append(time.thread_time() - started_cpu)
            p50, p99 = p50_p99(samples)
            cpu50, _ = p50_p99(cpu)
            print(f"  {size:5d} entries, {words_per_key}-word keys: {len(chosen):4d} triggered, "
                  f"p50 {p50 * 1e3:7.2f} ms  p99 {p99 * 1e3:7.2f} ms  "
                  f"CPU p50 {cpu50 * 1e3:7.2f} ms ({cpu50 / size * 1e6:5.1f} µs per entry)")


if __name__ == "__main__":
    main()
