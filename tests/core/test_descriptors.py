"""Room for file descriptors at start-up (app.core.descriptors): the soft limit is raised to
the hard one (up to DESCRIPTOR_LIMIT), and the kernel's descriptor table already holds
DESCRIPTOR_TABLE entries, so opening many connections later never grows it (each growth,
in a process with threads, blocked the loop 10–17 ms). Each case runs in a fresh process
started with a low soft limit: the table and the limit are the process's own."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap

from app.core.descriptors import DESCRIPTOR_LIMIT, DESCRIPTOR_TABLE

PROBE = textwrap.dedent("""
    import json, os, resource, socket, threading
    from app.core.descriptors import reserve_descriptors

    def table_size():
        for line in open("/proc/self/status"):
            if line.startswith("FDSize:"):
                return int(line.split()[1])

    before = table_size()
    threading.Thread(target=lambda: None).start()  # a process with threads, as the server
    first = reserve_descriptors()
    second = reserve_descriptors()
    after = table_size()
    sockets = [socket.socket() for _ in range(600)]  # a crowd of connections
    crowd = table_size()
    print(json.dumps({"before": before, "after": after, "crowd": crowd, "first": first,
                      "second": second, "soft": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}))
""")


def run_probe(soft: int) -> dict:
    def lower_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          preexec_fn=lower_limit, timeout=60, check=True)
    return json.loads(done.stdout)


def test_the_limit_is_raised_and_the_table_grown_once_at_start_up() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    wanted = DESCRIPTOR_LIMIT if hard == resource.RLIM_INFINITY else min(hard, DESCRIPTOR_LIMIT)
    result = run_probe(soft=256)
    assert result["soft"] == wanted
    assert result["before"] < min(wanted, DESCRIPTOR_TABLE)  # a fresh process's small table
    assert result["after"] >= min(wanted, DESCRIPTOR_TABLE)
    assert result["crowd"] == result["after"]  # 600 sockets later: not grown again
    assert result["first"] == result["second"] == [wanted, min(wanted, DESCRIPTOR_TABLE)]


def test_a_soft_limit_already_high_enough_is_left_as_it_is() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    soft = hard if hard != resource.RLIM_INFINITY else DESCRIPTOR_LIMIT * 2
    result = run_probe(soft=soft)
    assert result["soft"] == soft
    assert result["after"] >= min(soft, DESCRIPTOR_TABLE)
