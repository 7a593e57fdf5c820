"""Counters without content (`GET /api/privacy/stats`): how often the gateway masked, what
kinds, how often a reply was blocked. Never a value, never the mapping. Per user, in memory
(since the process started)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from app.llm.privacy.spans import KINDS


@dataclass(slots=True)
class Counters:
    calls_masked: int = 0  # remote calls whose prompt went through the masker
    values_masked: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    replies_blocked: int = 0  # replies that carried a plaintext identity (each attempt)
    retries: int = 0  # corrective retries after a blocked reply
    calls_blocked: int = 0  # calls that failed with privacy_blocked (after the retry, or refused)
    requests_blocked: int = 0  # requests the egress gate refused: a name the masking missed
    fallbacks: int = 0  # callers (journal stages) that took their local fallback

    def as_dict(self) -> dict[str, object]:
        return {
            "calls_masked": self.calls_masked,
            "values_masked": dict(self.values_masked),
            "replies_blocked": self.replies_blocked,
            "retries": self.retries,
            "calls_blocked": self.calls_blocked,
            "requests_blocked": self.requests_blocked,
            "fallbacks": self.fallbacks,
        }


class PrivacyStats:
    def __init__(self) -> None:
        self._by_user: defaultdict[str, Counters] = defaultdict(Counters)

    def of(self, user_id: str) -> Counters:
        return self._by_user[user_id]

    def masked(self, user_id: str, counts: dict[str, int]) -> None:
        counters = self._by_user[user_id]
        counters.calls_masked += 1
        for kind, count in counts.items():
            counters.values_masked[kind] += count

    def fallback(self, user_id: str) -> None:
        """A caller took its local fallback after `privacy_blocked` (journal stages)."""
        self._by_user[user_id].fallbacks += 1
