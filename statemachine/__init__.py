"""Lifecycles as data (pure `transitions` machines; imports nothing of `app/`)."""

from statemachine.turn import (
    DELIVERED,
    FAILED,
    PATH1,
    PATH2,
    QUEUED,
    RUNNING_STATES,
    STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    TRIGGERS,
    IllegalTransition,
    TurnLifecycle,
    build_machine,
)

__all__ = [
    "DELIVERED",
    "FAILED",
    "PATH1",
    "PATH2",
    "QUEUED",
    "RUNNING_STATES",
    "STATES",
    "TERMINAL_STATES",
    "TRANSITIONS",
    "TRIGGERS",
    "IllegalTransition",
    "TurnLifecycle",
    "build_machine",
]
