"""The one percentile every bench prints (`p50`, `p99`, …).

Definition: linear interpolation between the two closest ranks of the sorted samples — the
value at position `q × (n − 1)` (0-based) — as numpy's default and
`statistics.quantiles(method="inclusive")` compute it. So `percentile(s, 0.5)` is exactly
`statistics.median(s)`, and a p99 of fewer than 100 samples lies between the two largest
rather than being the largest. No samples: NaN (printed as `nan`), never a made-up 0.

    from bench.percentiles import percentile, p50_p99
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(samples: Iterable[float], q: float) -> float:
    """The `q`-quantile (0 ≤ q ≤ 1) of `samples`, by the definition above."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be within [0, 1], got {q!r}")
    ordered = sorted(samples)
    if not ordered:
        return math.nan
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def p50_p99(samples: Iterable[float]) -> tuple[float, float]:
    """The median and the 99th percentile, the pair most figures print."""
    ordered = sorted(samples)
    return percentile(ordered, 0.5), percentile(ordered, 0.99)
