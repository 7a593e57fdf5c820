"""Process lifetime helpers: no process of ours outlives the one that started it."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.core.settings import CrashPoint, Settings

_PR_SET_PDEATHSIG = 1


def set_parent_death_signal(signum: int = signal.SIGTERM) -> None:
    """Ask the kernel to send `signum` to this process when its parent dies (Linux only)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signum)


def follow_bootloader() -> None:
    """In the one-file binary, end with the bootloader that unpacked us.

    PyInstaller's one-file bootloader runs the app as its child and waits for it; a
    `kill -9` of the bootloader would otherwise leave the app (and its Redis) running.
    With the death signal set, the app gets SIGTERM and shuts down cleanly.
    """
    if not getattr(sys, "frozen", False):
        return
    parent = os.getppid()
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != parent:  # the bootloader died before the signal was armed
        os.kill(os.getpid(), signal.SIGTERM)


def crash_point(settings: Settings, point: CrashPoint) -> None:
    """Die here, by SIGKILL like `kill -9` (no clean-up of any kind), when the setting
    `test_crash_at` names `point`: the crash tests arm it to stop a process between two
    writes that must both land."""
    if settings.test_crash_at == point:
        os.kill(os.getpid(), signal.SIGKILL)
