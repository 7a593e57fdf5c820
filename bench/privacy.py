"""Privacy gateway cost: masking a 2 000-character prompt (SPEC §7a; target ≤ 2 ms at p50).

    .venv/bin/python bench/privacy.py [--iterations 2000]

The prompt is German and English chat text with a mix of identities (registered names,
unregistered names after honorifics, phone numbers, an e-mail address, an IBAN, a Steuer-ID,
an address, a birth date, a car plate, a private link) and homonyms; the registry holds 25
people. Measured, alternating so that drift hits all alike:

- floor: one pass of a compiled word pattern over the same text (`re.findall(r"\\w+")`) —
  the least any detector that reads every word must do;
- mask: `Masker(index).mask(prompt)` — every detector, settling, placeholders;
- mask + check: the same plus checking a 600-character reply for leaks (what a call adds).

Also printed: building a registry's `NameIndex` (done once per registry change, not per
call) and the evaluation set's recall per kind (`tests/data/privacy_cases.jsonl`).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.llm.privacy import Masker, NameIndex, warm_up  # noqa: E402
from tests.privacy_eval import load, score  # noqa: E402

PEOPLE = ["Anna Schmidt", "Anni", "Paul Meier", "Onkel August", "Frau Dr. Özdemir", "Frank",
          "Herr Freitag", "Frau Rosen", "Gisela", "Tom Baker", "Lena Berg", "Jürgen", "Mila",
          "Oma Gerda", "Sven Larsen", "Priya Natarajan", "Declan", "Hildegard", "Kurt",
          "Malte", "Ingrid", "Yusuf", "Helga Brandt", "Sophie", "Ben"]
PARAGRAPHS = [
    "Heute Morgen hat mich Anna angerufen, sie war bei Frau Dr. Özdemir wegen ihres Knies. ",
    "Am Freitag kommt Herr Freitag vorbei, und Onkel August feiert im August Geburtstag. ",
    "Ruf mich unter 0170/1234567 an oder schreib an anna.schmidt@example.org, danke. ",
    "Die Miete geht an DE89 3704 0044 0532 0130 00, meine Steuer-ID ist 86095742719. ",
    "Wir wohnen in der Weserstr. 112, 28199 Bremen, das Auto hat HH-JK 4711E. ",
    "Paul war geboren am 12.03.1985, sagt er, und die Fotos sind auf "
    "https://photos.app.goo.gl/Xy7kP2mN4qR8 zu sehen. ",
    "Yesterday I met Priya at the market and then Jonathan said we should leave early. ",
    "Rosen aus dem Garten habe ich Frau Rosen geschenkt, frank und frei gesagt. ",
    "Mein Kollege Sven ist im Urlaub, und Herr Kowalski hat die Wohnung gezeigt. ",
    "Bis Montag muss der Bericht fertig sein, die Bestellnummer 123456789 kam heute an. ",
]
REPLY = ("Das klingt nach einem vollen Tag. Grüß [PERSON_1] von mir, und sag [PERSON_3], "
         "dass ich an den Termin am Freitag denke. Die Nummer [PHONE_1] habe ich notiert. " * 4)


def prompt(length: int = 2000) -> str:
    text = ""
    while len(text) < length:
        text += PARAGRAPHS[len(text) // 97 % len(PARAGRAPHS)]
    return text[:length].rsplit(" ", 1)[0]


def measure(fn, iterations: int) -> list[float]:
    times = []
    for _ in range(iterations):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return times


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    warm_up()
    text = prompt()
    started = time.perf_counter()
    index = NameIndex(PEOPLE)
    index_ms = (time.perf_counter() - started) * 1000
    words = re.compile(r"\w+")

    def floor() -> None:
        words.findall(text)

    def mask() -> None:
        Masker(index).mask(text)

    def mask_and_check() -> None:
        masker = Masker(index)
        masker.mask(text)
        masker.check(REPLY)

    runs: dict[str, list[float]] = {"floor": [], "mask": [], "mask + check": []}
    for _ in range(10):  # alternate in slices so drift hits all alike
        for name, fn in (("floor", floor), ("mask", mask), ("mask + check", mask_and_check)):
            runs[name] += measure(fn, max(1, args.iterations // 10))
    masked = Masker(index).mask(text)
    print(f"prompt {len(text)} chars, {masked.count('[')} placeholders, registry of "
          f"{len(PEOPLE)} people ({len(index.terms)} terms; index built once in "
          f"{index_ms:.2f} ms)")
    floor_p50 = statistics.median(runs["floor"])
    for name, values in runs.items():
        p50 = statistics.median(values)
        print(f"{name:<13} p50 {p50:7.3f} ms   p99 {p(values, 99):7.3f} ms   "
              f"{p50 / floor_p50:6.1f}x floor")
    verdict = "OK" if statistics.median(runs["mask"]) <= 2.0 else "ABOVE TARGET"
    print(f"target: mask p50 <= 2 ms: {verdict}")
    print("\nevaluation set (tests/data/privacy_cases.jsonl):")
    print(score(load()).report())


if __name__ == "__main__":
    main()
