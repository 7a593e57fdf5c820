"""Room for file descriptors, made once at start-up instead of while the loop is busy.

Linux keeps a process's open files in a table that grows by doubling when a new descriptor
does not fit (at 64, 128, 256, …). In a process with threads (asyncio's executor, the
database's and the backup's workers) each growth waits for an RCU grace period: the call
that opened the descriptor — a socket for a new connection — blocks the loop 10–17 ms (the
stall bench, 200 pairs: the loop lag's maximum was such a `socket()` in the pool's growth,
11–17 ms of wall time with 0.3 ms of CPU; issue 24 item 18). `reserve_descriptors` grows the
table once, before the first request, to `DESCRIPTOR_TABLE` entries (or the limit, if that
is lower); a table never shrinks.

It also raises the soft limit on open files to the hard one (up to `DESCRIPTOR_LIMIT`), as
servers do: the common soft default of 1 024 would refuse connections at about a thousand
people, while the hard limit allows far more. A limit that still bites shows as a failed
accept or connection in the log, not as a stall.
"""

from __future__ import annotations

import logging
import os
import resource

from app.core.log import fields

log = logging.getLogger(__name__)

DESCRIPTOR_LIMIT = 65_536  # the soft limit raised to at most this (the hard one, if lower)
DESCRIPTOR_TABLE = 16_384  # entries made room for at start-up (~130 KB of kernel memory)


def reserve_descriptors() -> tuple[int, int]:
    """Raise the soft limit, grow the descriptor table; returns (soft limit, table size).
    Idempotent: a second call finds both done."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = DESCRIPTOR_LIMIT if hard == resource.RLIM_INFINITY else min(hard, DESCRIPTOR_LIMIT)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            log.info(
                "open-file limit raised", extra=fields(soft_before=soft, soft=wanted, hard=hard)
            )
            soft = wanted
        except (ValueError, OSError) as exc:  # a sandbox that forbids it: keep the soft one
            log.warning(
                "open-file limit not raised", extra=fields(soft=soft, hard=hard, error=str(exc))
            )
    table = DESCRIPTOR_TABLE if soft == resource.RLIM_INFINITY else min(soft, DESCRIPTOR_TABLE)
    _grow_table_to(table)
    return soft, table


def _grow_table_to(size: int) -> None:
    """Make the table hold descriptors 0 … size - 1: a descriptor duplicated onto the last
    one makes the kernel grow the table to cover it, and closing it leaves the room."""
    highest = size - 1
    try:
        os.fstat(highest)
        return  # in use: the table already reaches it
    except OSError:
        pass
    probe = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.dup2(probe, highest, inheritable=False)
        os.close(highest)
    except OSError as exc:  # below the limit by construction; a sandbox may still refuse
        log.warning("descriptor table not grown", extra=fields(size=size, error=str(exc)))
    finally:
        os.close(probe)
