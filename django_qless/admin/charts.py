"""SVG geometry for the admin's charts: stacked bars, lines, percentiles, deploy markers,
duration histograms, axes, sparklines.

Templates draw what this computes (`_live_chart.html`, `_bar_chart.html`); nothing here
knows about qless. A chart is drawn at least at its size in SVG units, one unit a CSS
pixel (the page scrolls it on a narrow screen rather than shrink it), so its axis labels
are at the page's text size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core import ms_buckets
from ..core.deploys import Deploy

#: Chart size in SVG units (CSS pixels at the least), and the margins around the plot that
#: hold the axis labels: the y axis's title on top, its values on the left, times below.
WIDTH, HEIGHT = 720, 280
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 34, 30
#: Longest deploy label drawn on a chart (the full one is in its tooltip and the summary).
MARKER_LABEL = 24
#: Sparkline size in SVG units.
SPARK_WIDTH, SPARK_HEIGHT = 120, 24
#: Most steps between labels on the y axis.
MAX_TICKS = 5


@dataclass(frozen=True)
class Tick:
    """A labelled position on an axis."""

    at: float
    label: str


@dataclass(frozen=True)
class Rect:
    """One segment of a stacked bar, with the text its tooltip shows."""

    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True)
class Line:
    """One series drawn as lines: a polyline per run of known values (gaps stay gaps)."""

    name: str
    css: str
    segments: tuple[str, ...]
    #: Single known values between gaps, drawn as dots (a polyline of one point is invisible).
    dots: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Marker:
    """A deploy drawn as a labelled vertical line at `x`."""

    x: float
    label: str
    title: str
    #: The whole label (`label` may be cut short to fit).
    name: str = ""

    @property
    def anchor(self) -> str:
        """Which way its label runs: right of the line, or left of it past the middle."""
        return "start" if self.x < (LEFT + WIDTH - RIGHT) / 2 else "end"

    @property
    def text_x(self) -> float:
        """Where its label starts (or ends), clear of the line."""
        return self.x + 4 if self.anchor == "start" else self.x - 4


@dataclass(frozen=True)
class Chart:
    """A chart over time slots: axes, then bars or lines, deploy markers, and a legend."""

    label: str
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    legend: tuple[tuple[str, str], ...]
    rects: tuple[Rect, ...] = ()
    lines: tuple[Line, ...] = ()
    markers: tuple[Marker, ...] = ()
    #: What the y axis counts, with its unit ("jobs per minute", "milliseconds").
    y_title: str = ""
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above `value` (at least 1)."""
    if value <= 1:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


def is_nice(step: float) -> bool:
    """Whether `step` is 1, 2 or 5 times a power of ten."""
    mantissa = step / 10.0 ** math.floor(math.log10(step))
    return any(math.isclose(mantissa, nice) for nice in (1, 2, 5))


def y_ticks(top: float, unit: str = "", whole: bool = True) -> tuple[Tick, ...]:
    """Labels from 0 to `top` (a `nice_ceiling`) at a nice step, whole numbers if `whole`."""
    count = next(count for count in (MAX_TICKS, 4, 2, 1)
                 if is_nice(top / count) and (not whole or (top / count).is_integer()))
    return tuple(Tick(y_of(top * index / count, top), f"{top * index / count:g}{unit}")
                 for index in range(count + 1))


def y_of(value: float, top: float) -> float:
    """The y coordinate of `value` on an axis from 0 to `top`."""
    return round(HEIGHT - BOTTOM - (HEIGHT - BOTTOM - TOP) * value / top, 2)


def slot_x(index: int, slots: int) -> float:
    """The left edge of time slot `index` of `slots`."""
    return LEFT + (WIDTH - LEFT - RIGHT) * index / slots


def x_ticks(labels: Mapping[int, str], slots: int) -> tuple[Tick, ...]:
    """Labels under the middle of the given slots."""
    half = (WIDTH - LEFT - RIGHT) / slots / 2
    return tuple(Tick(round(slot_x(index, slots) + half, 2), label)
                 for index, label in sorted(labels.items()))


def deploy_places(deploys: Sequence[Deploy], first: float, width: float
                  ) -> list[tuple[float, str]]:
    """Where each deploy falls on slots `width` seconds wide from `first`: (slot position,
    label), as `markers` takes them."""
    return [((deploy.at - first) / width, deploy.label) for deploy in deploys]


def markers(places: Sequence[tuple[float, str]], slots: int) -> tuple[Marker, ...]:
    """Deploy markers at (slot position, label) places: 2.5 is half way through slot 2."""
    found = []
    for at, label in places:
        if 0 <= at <= slots:
            short = label if len(label) <= MARKER_LABEL else label[:MARKER_LABEL - 1] + "\u2026"
            found.append(Marker(round(LEFT + (WIDTH - LEFT - RIGHT) * at / slots, 2), short,
                                f"Deploy: {label}", label))
    return tuple(found)


def stacked_bars(label: str, slots: Sequence[Mapping[str, int]],
                 stack: Sequence[tuple[str, str]], slot_names: Sequence[str],
                 labels: Mapping[int, str], partial_last: bool = False,
                 deploys: Sequence[tuple[float, str]] = (), y_title: str = "") -> Chart:
    """One bar per slot, its `stack` (key, legend name) segments bottom up.

    `slot_names` say which slot a tooltip is about; with `partial_last` the last bar is
    drawn apart (a slot still filling up); `deploys` are (slot position, label) markers.
    """
    peak = max((sum(slot.get(key, 0) for key, _ in stack) for slot in slots), default=0)
    top = nice_ceiling(peak)
    width = (WIDTH - LEFT - RIGHT) / max(len(slots), 1)
    rects = []
    for index, slot in enumerate(slots):
        base = 0
        for key, name in stack:
            count = slot.get(key, 0)
            if not count:
                continue
            css = f"qless-series-{key}" + (" qless-partial" if partial_last
                                           and index == len(slots) - 1 else "")
            y = y_of(base + count, top)
            rects.append(Rect(
                x=round(slot_x(index, len(slots)) + width * 0.1, 2), y=y,
                width=round(width * 0.8, 2), height=round(y_of(base, top) - y, 2), css=css,
                title=f"{slot_names[index]}: {count} {name}",
            ))
            base += count
    return Chart(label=label, y_ticks=y_ticks(top), x_ticks=x_ticks(labels, len(slots)),
                 legend=tuple((name, f"qless-series-{key}") for key, name in stack),
                 rects=tuple(rects), markers=markers(deploys, max(len(slots), 1)),
                 y_title=y_title)


def line_chart(label: str, series: Sequence[tuple[str, str, Sequence[float | None]]],
               labels: Mapping[int, str], unit: str = "", ceiling: float | None = None,
               deploys: Sequence[tuple[float, str]] = (), y_title: str = "") -> Chart:
    """One line per (key, legend name, values) series, values None where unknown.

    The y axis goes up to the nice ceiling of the largest value, at most `ceiling`;
    `deploys` are (slot position, label) markers.
    """
    peak = max((value for _, _, values in series for value in values if value is not None),
               default=0.0)
    top = nice_ceiling(peak)
    if ceiling is not None:
        top = min(top, ceiling)
    slots = max((len(values) for _, _, values in series), default=1)
    half = (WIDTH - LEFT - RIGHT) / slots / 2
    lines = []
    for key, name, values in series:
        runs: list[list[tuple[float, float]]] = [[]]
        for index, value in enumerate(values):
            if value is None:
                runs.append([])
                continue
            runs[-1].append((round(slot_x(index, slots) + half, 2), y_of(value, top)))
        lines.append(Line(
            name=name, css=f"qless-series-{key}",
            segments=tuple(" ".join(f"{x},{y}" for x, y in run) for run in runs if len(run) > 1),
            dots=tuple(run[0] for run in runs if len(run) == 1),
        ))
    return Chart(label=label, y_ticks=y_ticks(top, unit, whole=not unit),
                 x_ticks=x_ticks(labels, slots),
                 legend=tuple((name, f"qless-series-{key}") for key, name, _ in series),
                 lines=tuple(lines), markers=markers(deploys, slots), y_title=y_title)


#: The percentiles drawn on duration charts: (series key, legend name, fraction).
PERCENTILES = (("p50", "p50 (median)", 0.5), ("p95", "p95", 0.95), ("p99", "p99", 0.99))


def percentile_series(histograms: Sequence[Sequence[int] | None], scale: float = 1.0
                      ) -> list[tuple[str, str, list[float | None]]]:
    """p50, p95 and p99 of each slot's `ms_buckets` histogram, in ms divided by `scale`;
    None for a slot without a histogram or samples."""
    series: list[tuple[str, str, list[float | None]]] = []
    for key, name, fraction in PERCENTILES:
        values: list[float | None] = []
        for counts in histograms:
            found = None if counts is None else ms_buckets.percentile(counts, fraction)
            values.append(None if found is None else round(found / scale, 3))
        series.append((key, name, values))
    return series


def duration_chart(label: str, histograms: Sequence[Sequence[int] | None],
                   labels: Mapping[int, str], deploys: Sequence[tuple[float, str]] = (),
                   what: str = "run time") -> Chart:
    """p50/p95/p99 lines of per-slot `ms_buckets` histograms (run or wait times), in ms or,
    when the slowest p99 reaches a second, in seconds."""
    slowest = max((value for _, _, values in percentile_series(histograms)
                   for value in values if value is not None), default=0.0)
    unit, scale = ("ms", 1.0) if slowest < 1000 else ("s", 1000.0)
    return line_chart(label, percentile_series(histograms, scale), labels, unit=f" {unit}",
                      deploys=deploys, y_title=f"{what}, {unit}")


@dataclass(frozen=True)
class Bar:
    """One bar of a histogram: a duration range, its jobs, and where it is drawn."""

    x: float
    y: float
    width: float
    height: float
    label: str
    count: int


@dataclass(frozen=True)
class BarChart:
    """A histogram of durations: bars labelled by their range, counted on the y axis."""

    label: str
    bars: tuple[Bar, ...]
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    y_title: str = "jobs"
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM

    @property
    def peak(self) -> int:
        """The tallest bar's jobs."""
        return max((bar.count for bar in self.bars), default=0)

    @property
    def summary(self) -> str:
        """The chart in words: its range, tallest bar, and the jobs of each bar holding any."""
        if not self.bars:
            return "No jobs."
        counts = "; ".join(f"{bar.count} in {bar.label}" for bar in self.bars if bar.count)
        return (f"{len(self.bars)} bars from {self.bars[0].label} to {self.bars[-1].label}, "
                f"the tallest {self.peak} jobs. Jobs per bar: {counts}.")


def duration_text(milliseconds: float, unit: str) -> str:
    """A duration in `unit` (ms, s, min or h), without the unit."""
    return f"{milliseconds / dict(UNITS)[unit]:g}"


#: Units of duration labels, largest first, with their length in ms.
UNITS = (("h", 3_600_000), ("min", 60_000), ("s", 1000), ("ms", 1))


def duration_range(low: float, high: float | None) -> str:
    """A bucket's range in the unit of its lower end: "100\u2013150 ms", "1.5\u20132 s",
    "over 1 h"."""
    unit = next(name for name, length in UNITS if (low or high or 0) >= length or name == "ms")
    if high is None:
        return f"over {duration_text(low, unit)} {unit}"
    return f"{duration_text(low, unit)}\u2013{duration_text(high, unit)} {unit}"


def bar_chart(label: str, bars: Sequence[tuple[str, int]], most_labels: int = 8) -> BarChart:
    """One bar per (range label, jobs), side by side over the plot's width, at most
    `most_labels` of them labelled under the axis (every one in its tooltip)."""
    top = nice_ceiling(max((count for _, count in bars), default=0))
    width = (WIDTH - LEFT - RIGHT) / max(len(bars), 1)
    every = max(1, math.ceil(len(bars) / most_labels))
    drawn = []
    for index, (name, count) in enumerate(bars):
        y = y_of(count, top)
        drawn.append(Bar(round(slot_x(index, len(bars)) + width * 0.08, 2), y,
                         round(width * 0.84, 2), round(HEIGHT - BOTTOM - y, 2), name, count))
    return BarChart(label, tuple(drawn), y_ticks(top),
                    x_ticks({index: name for index, (name, _) in enumerate(bars)
                             if index % every == 0}, len(bars)))


def ms_histogram(label: str, counts: Sequence[int], most: int = 24) -> BarChart:
    """The chart of an `ms_buckets` histogram: its `adapted` bars, "100\u2013150 ms" and so on."""
    return bar_chart(label, [(duration_range(bar.low, bar.high), bar.count)
                             for bar in ms_buckets.adapted(counts, most)])


def sparkline(values: Sequence[int]) -> str:
    """Polyline points of a small chart of `values` (no axes), scaled to their peak."""
    top = max(max(values, default=0), 1)
    step = SPARK_WIDTH / max(len(values) - 1, 1)
    return " ".join(
        f"{round(index * step, 1)},{round(SPARK_HEIGHT - 1 - (SPARK_HEIGHT - 2) * value / top, 1)}"
        for index, value in enumerate(values)
    )
