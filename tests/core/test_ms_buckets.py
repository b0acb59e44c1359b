"""Millisecond histogram buckets: placement, percentiles, and the bars drawn."""

from __future__ import annotations

from django_qless.core import ms_buckets as mb


def histogram(*durations: float) -> list[int]:
    counts = [0] * mb.COUNT
    for ms in durations:
        counts[mb.bucket_of(ms)] += 1
    return counts


def test_a_duration_falls_in_the_bucket_whose_bounds_hold_it() -> None:
    for ms in (0, 0.4, 1, 1.2, 138, 999, 1000, 1001, 3_600_000, 10**9):
        index = mb.bucket_of(ms)
        upper = mb.upper_bound(index)
        assert mb.lower_bound(index) <= ms
        assert upper is None or ms <= upper
    assert mb.upper_bound(mb.COUNT - 1) is None


def test_percentiles_interpolate_inside_a_bucket() -> None:
    counts = histogram(*[120] * 50, *[180] * 50)
    p50 = mb.percentile(counts, 0.5)
    p99 = mb.percentile(counts, 0.99)
    assert p50 is not None and p99 is not None
    assert 100 <= p50 <= 150 < p99 <= 200
    assert mb.percentile([0] * mb.COUNT, 0.5) is None


def test_the_last_bucket_reports_its_lower_bound() -> None:
    assert mb.percentile(histogram(10**10), 0.5) == mb.BOUNDS[-1]


def test_bars_span_only_the_data_and_stay_few() -> None:
    bars = mb.adapted(histogram(3, 3, 40))
    assert bars[0].low == 2 and bars[-1].high == 50
    assert sum(bar.count for bar in bars) == 3
    wide = mb.adapted(histogram(0.5, 10**9), most=10)
    assert len(wide) <= 10 and wide[0].low == 0 and wide[-1].high is None
    assert sum(bar.count for bar in wide) == 2
    assert mb.adapted([0] * mb.COUNT) == []
