"""SVG geometry for the admin's time charts: stacked bars, lines, axes, sparklines.

Templates draw what this computes (`_live_chart.html`); nothing here knows about qless. The
charts use fixed SVG units scaled to the page's width by CSS, so labels stay readable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Chart size in SVG units, and the margins around the plot that hold the axis labels.
WIDTH, HEIGHT = 640, 180
LEFT, RIGHT, TOP, BOTTOM = 48, 10, 10, 22
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
class Chart:
    """A chart over time slots: axes, then bars or lines, and a legend."""

    label: str
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    legend: tuple[tuple[str, str], ...]
    rects: tuple[Rect, ...] = ()
    lines: tuple[Line, ...] = ()
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


def stacked_bars(label: str, slots: Sequence[Mapping[str, int]],
                 stack: Sequence[tuple[str, str]], slot_names: Sequence[str],
                 labels: Mapping[int, str], partial_last: bool = False) -> Chart:
    """One bar per slot, its `stack` (key, legend name) segments bottom up.

    `slot_names` say which slot a tooltip is about; with `partial_last` the last bar is
    drawn apart (a slot still filling up).
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
                 rects=tuple(rects))


def line_chart(label: str, series: Sequence[tuple[str, str, Sequence[float | None]]],
               labels: Mapping[int, str], unit: str = "", ceiling: float | None = None
               ) -> Chart:
    """One line per (key, legend name, values) series, values None where unknown.

    The y axis goes up to the nice ceiling of the largest value, at most `ceiling`.
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
                 lines=tuple(lines))


def sparkline(values: Sequence[int]) -> str:
    """Polyline points of a small chart of `values` (no axes), scaled to their peak."""
    top = max(max(values, default=0), 1)
    step = SPARK_WIDTH / max(len(values) - 1, 1)
    return " ".join(
        f"{round(index * step, 1)},{round(SPARK_HEIGHT - 1 - (SPARK_HEIGHT - 2) * value / top, 1)}"
        for index, value in enumerate(values)
    )
