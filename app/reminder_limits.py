"""What a reminder may be, checked where due times enter (the API and the reminders agent).

`check_due_at` takes an already-parsed epoch time (however it was read) and refuses what
cannot be a reminder: not a finite number, more than `PAST_GRACE_SECONDS` in the past, or
further ahead than `reminder_max_days_ahead`. Nothing is written for a refused time — a
stored year 9999 once made the pair's reminder list fail for ever.
The per-pair cap (`max_reminders_per_pair`) is kept by the store in the same step that adds.
"""

from __future__ import annotations

import math
from typing import Literal

PAST_GRACE_SECONDS = 60  # "now" said a moment ago is not the past
DAY = 24 * 3600

Problem = Literal["not_a_time", "past", "too_far"]


class DueTimeRefused(ValueError):
    def __init__(self, problem: Problem, message: str) -> None:
        super().__init__(message)
        self.problem = problem


class TooManyReminders(Exception):
    """The pair already has `max_reminders_per_pair` pending reminders."""


def check_due_at(due_at: float, now: float, max_days_ahead: int) -> None:
    """Raise `DueTimeRefused` unless `due_at` lies in [now − 1 min, now + max_days_ahead]."""
    if not math.isfinite(due_at):
        raise DueTimeRefused("not_a_time", f"due_at {due_at!r} is not a time")
    if due_at < now - PAST_GRACE_SECONDS:
        raise DueTimeRefused("past", "due_at lies in the past (more than "
                             f"{PAST_GRACE_SECONDS} s before now)")
    if due_at > now + max_days_ahead * DAY:
        raise DueTimeRefused("too_far", f"due_at lies more than {max_days_ahead} days ahead "
                             "(setting reminder_max_days_ahead)")
