"""Cold start to the first healthy response, from source and from the one-file binary.

    .venv/bin/python bench/startup.py [--runs 5]

Each run starts the app `--headless` on a free port with a fresh data dir, polls
`/api/health` every 5 ms and stops it with SIGTERM. Prints the median and the spread.
Targets (issue 2): ≤ 1.0 s from source, ≤ 1.5 s from the binary.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.procs import clean_env, free_port  # noqa: E402


def time_start(command: list[str]) -> float:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        proc = subprocess.Popen([*command, "--headless", "--host", "127.0.0.1", "--port",
                                 str(port), "--data-dir", tmp, "--token", "bench-token"],
                                cwd=ROOT, env=clean_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health",
                                                timeout=1) as response:
                        if response.status == 200:
                            return time.perf_counter() - start
                except OSError:
                    if proc.poll() is not None:
                        raise RuntimeError(f"{command} exited with {proc.returncode}")
                    time.sleep(0.005)
        finally:
            proc.terminate()
            proc.wait(15)


def report(name: str, command: list[str], runs: int, target: float) -> None:
    time_start(command)  # warm the OS page cache once; the figures are for a warm disk
    samples = [time_start(command) for _ in range(runs)]
    median = statistics.median(samples)
    print(f"{name:<8} median {median:.3f} s  min {min(samples):.3f}  max {max(samples):.3f}"
          f"  (target ≤ {target} s: {'ok' if median <= target else 'MISSED'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    report("source", [sys.executable, "-m", "app"], args.runs, 1.0)
    binary = ROOT / "dist" / "novaberg"
    if binary.exists():
        report("binary", [str(binary)], args.runs, 1.5)
    else:
        print("binary   not built (make binary)")


if __name__ == "__main__":
    main()
