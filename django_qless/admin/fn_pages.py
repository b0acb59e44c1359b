"""What the Functions pages draw: one row per klass over a range, and one klass' charts.

Built from `core.fn_metrics` windows (one Redis round trip each) and the deploys of the
range; charts come from `charts` (lines and bars, deploys marked inside them).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import timezone

from ..core import ms_buckets
from ..core.deploys import Deploy
from ..core.fn_metrics import Figures, Resolution, Window
from .charts import Chart, deploy_places, duration_chart, stacked_bars

#: Range name -> (how it reads, slots between two labels under the charts, label unit).
RANGE_LABELS = {"1h": ("last hour", 10, "min"), "24h": ("last 24 hours", 16, "h"),
                "7d": ("last 7 days", 24, "d")}
#: Sort keys the list offers: name -> (Figures attribute, heading).
SORTS = {"total": ("run_ms", "total time"), "failures": ("failures", "failures"),
         "executions": ("executions", "executions"), "name": ("klass", "name")}
#: Rows of the "top" lists.
TOP = 5
#: Outcome segments of the executions chart, bottom up.
OUTCOMES = (("completed", "completed"), ("retried", "retried"), ("failed", "failed"))


def milliseconds(value: float | None) -> str:
    """A duration in ms as short text ("0.8 ms", "138 ms", "4.2 s", "3.5 min"); "-" for None."""
    if value is None:
        return "\u2013"
    if value < 10:
        return f"{value:.1f} ms"
    if value < 1000:
        return f"{value:.0f} ms"
    if value < 60_000:
        return f"{value / 1000:.1f} s"
    if value < 3_600_000:
        return f"{value / 60_000:.1f} min"
    return f"{value / 3_600_000:.1f} h"


@dataclass(frozen=True)
class Row:
    """One klass over the range, as the list shows it."""

    figures: Figures

    @property
    def klass(self) -> str:
        """The job function's name."""
        return self.figures.klass

    @property
    def total(self) -> str:
        """Time the klass ran over the range."""
        return milliseconds(float(self.figures.run_ms))

    @property
    def average(self) -> str:
        """Time one execution ran on average."""
        return milliseconds(self.figures.average_ms)

    @property
    def p50(self) -> str:
        """Median run time."""
        return milliseconds(self.figures.p50)

    @property
    def p95(self) -> str:
        """95th percentile of run time."""
        return milliseconds(self.figures.p95)

    @property
    def p99(self) -> str:
        """99th percentile of run time."""
        return milliseconds(self.figures.p99)


def rows(totals: dict[str, Figures], sort: str) -> list[Row]:
    """Every klass that ran in the range, by `sort` (the most first; names A to Z)."""
    attribute = SORTS[sort][0]
    if attribute == "klass":
        ordered = sorted(totals.values(), key=lambda f: f.klass)
    else:
        ordered = sorted(totals.values(), key=lambda f: (-getattr(f, attribute), f.klass))
    return [Row(figures) for figures in ordered if figures.executions]


def axis_labels(range_name: str, count: int) -> dict[int, str]:
    """Labels under every few slots, counted back from the last ("now")."""
    _, every, unit = RANGE_LABELS[range_name]
    step = {"min": 1, "h": 0.25, "d": 1 / 24}[unit]
    return {count - 1 - back: "now" if back == 0 else f"\u2212{back * step:g} {unit}"
            for back in range(0, count, every)}


def clock(at: float) -> str:
    """A time in the current time zone, with its day."""
    return timezone.localtime(dt.datetime.fromtimestamp(at, tz=dt.timezone.utc)).strftime(
        "%Y-%m-%d %H:%M")


def slot_name(start: float, resolution: Resolution) -> str:
    """A slot's start in the current time zone (with the day beyond the last hour)."""
    started = timezone.localtime(dt.datetime.fromtimestamp(start, tz=dt.timezone.utc))
    return started.strftime("%H:%M" if resolution.seconds == 60 else "%a %H:%M")


@dataclass(frozen=True)
class DeployLine:
    """One deploy of the range, as the page lists it: its label and time."""

    label: str
    when: str


def deploys_in(deploys: Sequence[Deploy], start: float, end: float) -> list[Deploy]:
    """The deploys of [start, end), oldest first."""
    return [deploy for deploy in deploys if start <= deploy.at < end]


@dataclass(frozen=True)
class FunctionPage:
    """One klass over a range: totals, charts and histograms."""

    total: Figures
    executions: Chart
    run_time: Chart
    wait_time: Chart
    run_bars: Chart | None
    wait_bars: Chart | None
    markers: tuple[DeployLine, ...]
    has_waits: bool


def build_function(window: Window, klass: str, range_name: str,
                   deploys: Sequence[Deploy]) -> FunctionPage:
    """The charts of one klass over the window."""
    slots = window.function(klass)
    resolution = window.resolution
    labels = axis_labels(range_name, len(slots))
    names = [slot_name(slot.start, resolution) for slot in window.slots]
    where = f"{klass}, {RANGE_LABELS[range_name][0]}"
    shown = deploys_in(deploys, window.start, window.end)
    # Drawn inside every time chart, as on the overview.
    places = deploy_places(shown, window.start, resolution.seconds)
    executions = stacked_bars(
        f"Executions per slot by outcome, {where}",
        [{"completed": f.completed, "retried": f.retries, "failed": f.failures} for f in slots],
        OUTCOMES, names, labels, partial_last=True, deploys=places, y_title="executions")
    # In ms, or in seconds once the slowest p99 reaches one (tick labels stay short).
    run_time = duration_chart(f"Run time percentiles per slot, {where}",
                              [f.run for f in slots], labels, places)
    wait_time = duration_chart(f"Wait time percentiles per slot, {where}",
                               [f.wait for f in slots], labels, places, what="wait time")
    total = Figures(klass)
    for figures in slots:
        total.add(figures)
    return FunctionPage(
        total=total, executions=executions, run_time=run_time, wait_time=wait_time,
        run_bars=histogram(f"Run time histogram, {where}", total.run),
        wait_bars=histogram(f"Wait time histogram, {where}", total.wait),
        markers=tuple(DeployLine(deploy.label, clock(deploy.at)) for deploy in shown),
        has_waits=any(total.wait))


def histogram(label: str, counts: Sequence[int]) -> Chart | None:
    """Bars of a ms histogram, from its first to its last non-empty bucket (None: empty)."""
    bars = ms_buckets.adapted(counts)
    if not bars:
        return None
    names = [bar_label(bar) for bar in bars]
    every = max(len(bars) // 6, 1)
    labels = {index: milliseconds(bar.low) for index, bar in enumerate(bars)
              if index % every == 0}
    # Drawn as the "completed" series: the bars' colour (every execution, whatever its end).
    return stacked_bars(label, [{"completed": bar.count} for bar in bars],
                        (("completed", "executions"),), names, labels)


def bar_label(bar: ms_buckets.Bar) -> str:
    """What durations one bar counts."""
    if bar.high is None:
        return f"over {milliseconds(bar.low)}"
    return f"{milliseconds(bar.low)} to {milliseconds(bar.high)}"
