"""The queue stats page's histograms, drawn by `charts.bar_chart`: qless's own (whole
seconds for the first minute, then minutes, hours, days) and millisecond ones."""

from __future__ import annotations

from collections.abc import Sequence

from .charts import BarChart, bar_chart, ms_histogram

#: Fewest of qless's buckets shown (0-10 s), so one busy bucket is not one wide block.
MIN_BUCKETS = 10
#: Where each unit of qless's buckets starts, its first value, and its name: s0..s59,
#: m1..m59, h1..h23, d1..
UNITS = ((142, 1, "d"), (119, 1, "h"), (60, 1, "min"), (0, 0, "s"))

__all__ = ["ms_histogram", "qless_histogram", "qless_range"]


def qless_range(index: int) -> str:
    """The durations of qless's bucket `index`: "0\u20131 s", "3\u20134 min"."""
    start, first, unit = next(unit for unit in UNITS if index >= unit[0])
    low = index - start + first
    return f"{low}\u2013{low + 1} {unit}"


def qless_histogram(label: str, histogram: Sequence[int]) -> BarChart | None:
    """A chart of one bar per qless bucket, from 0 to the last one holding a job (at least
    `MIN_BUCKETS`); None when it holds none."""
    last = max((index for index, count in enumerate(histogram) if count), default=-1)
    if last < 0:
        return None
    shown = min(len(histogram), max(last + 1, MIN_BUCKETS))
    return bar_chart(label, [(qless_range(index), histogram[index]) for index in range(shown)])
