"""SVG chart geometry: nice axis scales, stacked bars, lines with gaps, sparklines."""

from __future__ import annotations

import pytest

from django_qless.admin.charts import (
    BOTTOM,
    HEIGHT,
    TOP,
    line_chart,
    nice_ceiling,
    sparkline,
    stacked_bars,
    y_ticks,
)

LABELS = {0: "start", 3: "now"}


@pytest.mark.parametrize(("value", "ceiling"), [
    (0, 1), (0.3, 1), (1, 1), (1.5, 2), (3, 5), (7, 10), (13, 20), (101, 200), (4_999, 5_000),
])
def test_the_axis_goes_up_to_a_round_number(value: float, ceiling: float) -> None:
    assert nice_ceiling(value) == ceiling


@pytest.mark.parametrize(("top", "labels"), [
    (1, ["0", "1"]), (2, ["0", "1", "2"]), (10, ["0", "2", "4", "6", "8", "10"]),
    (20, ["0", "5", "10", "15", "20"]), (200, ["0", "50", "100", "150", "200"]),
])
def test_count_axes_have_whole_round_steps(top: float, labels: list[str]) -> None:
    ticks = y_ticks(top)
    assert [tick.label for tick in ticks] == labels
    assert ticks[0].at == HEIGHT - BOTTOM and ticks[-1].at == TOP


def test_a_percent_axis_may_have_fractions() -> None:
    assert [tick.label for tick in y_ticks(1, "%", whole=False)] == [
        "0%", "0.2%", "0.4%", "0.6%", "0.8%", "1%"]


def test_bars_stack_their_segments_and_mark_the_last_slot() -> None:
    slots = [{"ok": 3, "bad": 1}, {}, {"ok": 0, "bad": 2}, {"ok": 5}]
    chart = stacked_bars("jobs", slots, [("ok", "done"), ("bad", "failed")],
                         ["a", "b", "c", "d"], LABELS, partial_last=True)
    assert [(rect.css, rect.title) for rect in chart.rects] == [
        ("qless-series-ok", "a: 3 done"), ("qless-series-bad", "a: 1 failed"),
        ("qless-series-bad", "c: 2 failed"), ("qless-series-ok qless-partial", "d: 5 done"),
    ]
    ok, bad = chart.rects[0], chart.rects[1]
    assert bad.y + bad.height == pytest.approx(ok.y)  # stacked on top of each other
    assert chart.rects[-1].y == TOP  # the tallest bar reaches the top of a 0-5 axis
    assert [tick.label for tick in chart.x_ticks] == ["start", "now"]
    assert chart.legend == (("done", "qless-series-ok"), ("failed", "qless-series-bad"))


def test_lines_break_where_values_are_unknown() -> None:
    chart = line_chart("depth", [("w", "waiting", [1, 2, None, 4, None, None, 3, 5])],
                       LABELS)
    (line,) = chart.lines
    assert len(line.segments) == 2 and len(line.segments[0].split()) == 2
    assert len(line.dots) == 1  # the lone 4 between two gaps
    assert chart.y_ticks[-1].label == "5"


def test_a_ceiling_caps_the_axis() -> None:
    chart = line_chart("rate", [("r", "rate", [150.0])], LABELS, unit="%", ceiling=100)
    assert chart.y_ticks[-1].label == "100%"


def test_a_sparkline_spans_its_box() -> None:
    points = [point.split(",") for point in sparkline([0, 5, 10]).split()]
    assert [float(x) for x, _ in points] == [0, 60, 120]
    assert float(points[0][1]) > float(points[2][1])  # higher values are higher up
