"""The one percentile every bench prints (bench/percentiles.py, issue 10 item 10)."""

from __future__ import annotations

import math
import statistics

import pytest

from bench.percentiles import p50_p99, percentile


def test_the_median_is_the_50th_percentile() -> None:
    for samples in ([3.0], [1.0, 2.0], [5.0, 1.0, 4.0], [float(i % 7) for i in range(100)]):
        assert percentile(samples, 0.5) == statistics.median(samples)


def test_a_percentile_interpolates_between_the_closest_ranks() -> None:
    samples = [float(i) for i in range(1, 101)]  # 1 … 100: position 0.99 × 99 = 98.01
    assert percentile(samples, 0.99) == pytest.approx(99.01)
    assert percentile(samples, 0.0) == 1.0 and percentile(samples, 1.0) == 100.0
    assert percentile(reversed(samples), 0.25) == pytest.approx(25.75)  # order does not matter
    assert p50_p99(samples) == (50.5, pytest.approx(99.01))


def test_no_samples_give_nan_and_a_q_outside_0_1_is_refused() -> None:
    assert math.isnan(percentile([], 0.5))
    with pytest.raises(ValueError):
        percentile([1.0], 99)
