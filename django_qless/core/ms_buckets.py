"""Millisecond histograms: the bucket bounds every run-time and wait-time histogram shares.

Bounds grow by about 1.5x (1, 1.5, 2, 3, 5, 7 per decade), from 1 ms to an hour, so jobs
of 100 to 200 ms fall in two bars rather than one "0-1 s" bar, and a histogram is
a fixed list of counts that workers add to with `HINCRBY` (bucket index -> count).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

_STEPS = (1, 1.5, 2, 3, 5, 7)
#: Upper bound (ms, inclusive) of each bucket but the last, which has none.
BOUNDS: tuple[float, ...] = tuple(
    float(step * 10**decade)
    for decade in range(7)
    for step in _STEPS
    if step * 10**decade <= 3_600_000
)
#: Buckets per histogram: one per bound, plus the one above the last bound.
COUNT = len(BOUNDS) + 1


def bucket_of(milliseconds: float) -> int:
    """Index of the bucket a duration falls into."""
    return bisect.bisect_left(BOUNDS, milliseconds)


def lower_bound(index: int) -> float:
    """The lowest duration (ms) of bucket `index`."""
    return 0.0 if index == 0 else BOUNDS[index - 1]


def upper_bound(index: int) -> float | None:
    """The highest duration (ms) of bucket `index`; None for the last (unbounded) one."""
    return BOUNDS[index] if index < len(BOUNDS) else None


def percentile(counts: Sequence[int], fraction: float) -> float | None:
    """The duration (ms) below which `fraction` of the samples fall; None without samples.

    Interpolated linearly inside the bucket it falls in; the last bucket reports its lower
    bound (it has no upper one).
    """
    total = sum(counts)
    if total <= 0:
        return None
    rank = fraction * total
    seen = 0
    for index, count in enumerate(counts):
        if count and seen + count >= rank:
            low, high = lower_bound(index), upper_bound(index)
            if high is None:
                return low
            return low + (high - low) * max(rank - seen, 0) / count
        seen += count
    return lower_bound(len(counts) - 1)


@dataclass(frozen=True)
class Bar:
    """One bar of a drawn histogram: durations from `low` to `high` ms (None: no end)."""

    low: float
    high: float | None
    count: int


def adapted(counts: Sequence[int], most: int = 24) -> list[Bar]:
    """The bars worth drawing: from the first to the last non-empty bucket, merged in pairs
    until at most `most` remain, so the chart spans the data whatever its scale."""
    used = [index for index, count in enumerate(counts) if count]
    if not used:
        return []
    bars = [Bar(lower_bound(i), upper_bound(i), counts[i]) for i in range(used[0], used[-1] + 1)]
    while len(bars) > most:
        bars = [_merge(bars[i:i + 2]) for i in range(0, len(bars), 2)]
    return bars


def _merge(pair: Sequence[Bar]) -> Bar:
    """One bar covering one or two neighbours."""
    return Bar(pair[0].low, pair[-1].high, sum(bar.count for bar in pair))
