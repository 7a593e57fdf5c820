"""Messages per second per user: a token bucket (`rate_limit_per_second`, burst twice that).

Kept in memory per process: it protects this process's accept path and the GPU queue from
one runaway client; it is not an accounting system.
"""

from __future__ import annotations

import time


class RateLimiter:
    def __init__(self, per_second: float, *, burst_factor: float = 2.0) -> None:
        self.rate = per_second
        self.capacity = per_second * burst_factor
        self._buckets: dict[str, tuple[float, float]] = {}  # user → (tokens, last refill)

    def allow(self, user_id: str) -> bool:
        """Take one token for `user_id`; False (and nothing taken) when none is left."""
        now = time.monotonic()
        tokens, last = self._buckets.get(user_id, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - last) * self.rate)
        if tokens < 1.0:
            self._buckets[user_id] = (tokens, now)
            return False
        self._buckets[user_id] = (tokens - 1.0, now)
        return True
