"""`make bench` runs every bench there is (issue 24, item 18: bench/backup.py was missing):
each script of bench/ that runs as a program is a line of the Makefile's bench target, or of
a `bench-<name>` target of its own where it runs for minutes (bench/scaleout.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench_target(name: str = "bench") -> list[str]:
    makefile = (ROOT / "Makefile").read_text()
    body = re.search(rf"^{name}:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert body, f"the Makefile has no {name} target"
    return re.findall(r"bench/(\w+\.py)", body.group(1))


def test_every_bench_program_is_run_by_make_bench():
    programs = sorted(p.name for p in (ROOT / "bench").glob("*.py")
                      if 'if __name__ == "__main__":' in p.read_text())
    assert "backup.py" in programs and "exports.py" in programs
    own_targets = {"scaleout.py": "bench-scaleout"}
    assert sorted(bench_target() + list(own_targets)) == programs
    for program, target in own_targets.items():
        assert program in bench_target(target), target


def test_every_bench_program_starts_as_the_makefile_runs_it():
    # `python bench/x.py` puts bench/, not the repository, first on sys.path: a program that
    # imports `bench.…` without adding the root failed in `make bench` (bench/loopstall.py).
    import subprocess
    import sys

    programs = sorted(set(bench_target()) | set(bench_target("bench-scaleout")))
    started = {
        program: subprocess.Popen([sys.executable, f"bench/{program}", "--help"], cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for program in programs
    }
    failed = {program: process.communicate(timeout=120)[1].decode()[-300:]
              for program, process in started.items()}
    assert {p: e for p, e in failed.items() if started[p].returncode != 0} == {}
