"""SVG chart geometry: sizes, nice axis scales, stacked bars, lines with gaps, deploy markers,
percentile lines, duration histograms, sparklines."""

from __future__ import annotations

import pytest

from django_qless.admin.charts import (
    BOTTOM,
    HEIGHT,
    LEFT,
    RIGHT,
    TOP,
    WIDTH,
    duration_chart,
    duration_range,
    line_chart,
    markers,
    ms_histogram,
    nice_ceiling,
    percentile_series,
    sparkline,
    stacked_bars,
    x_ticks,
    y_of,
    y_ticks,
)
from django_qless.admin.stats_charts import qless_histogram, qless_range
from django_qless.core import ms_buckets

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


def test_charts_are_at_least_twice_the_old_size_with_room_for_their_labels() -> None:
    # The old charts rendered at about 335x94 px; these are drawn at least at their size.
    assert WIDTH >= 2 * 335 and HEIGHT >= 2 * 94
    assert LEFT >= 60 and BOTTOM >= 28 and TOP >= 30  # y values, x times, the y title


def test_x_labels_sit_under_the_middle_of_their_slots() -> None:
    ticks = x_ticks({0: "17:00", 9: "17:09"}, 10)
    plot = WIDTH - LEFT - RIGHT
    assert [tick.at for tick in ticks] == [LEFT + plot / 20, LEFT + plot * 19 / 20]
    assert [tick.label for tick in ticks] == ["17:00", "17:09"]


def test_deploy_markers_land_at_their_time_and_outside_ones_are_left_out() -> None:
    found = markers([(0, "first"), (5, "v" * 40), (10, "last"), (-0.5, "before"),
                     (10.5, "after")], 10)
    plot = WIDTH - LEFT - RIGHT
    assert [marker.x for marker in found] == [LEFT, LEFT + plot / 2, LEFT + plot]
    assert found[1].label == "v" * 23 + "\u2026" and found[1].name == "v" * 40
    assert found[1].title == "Deploy: " + "v" * 40
    # Labels run into the plot: right of a marker on the left half, left of one past it.
    assert (found[0].anchor, found[2].anchor) == ("start", "end")
    assert found[0].text_x > found[0].x and found[2].text_x < found[2].x


def test_every_chart_kind_takes_deploy_markers_and_a_y_title() -> None:
    bars = stacked_bars("jobs", [{"ok": 1}] * 4, [("ok", "done")], list("abcd"), LABELS,
                        deploys=[(2.0, "v1")], y_title="jobs per minute")
    lines = line_chart("rate", [("r", "rate", [1.0, 2.0])], LABELS, deploys=[(1.0, "v2")],
                       y_title="% of jobs")
    assert [m.label for m in bars.markers] == ["v1"] and bars.y_title == "jobs per minute"
    assert [m.x for m in lines.markers] == [LEFT + (WIDTH - LEFT - RIGHT) / 2]


def histogram_of(*durations: float) -> list[int]:
    """An `ms_buckets` histogram of the given durations (ms)."""
    counts = [0] * ms_buckets.COUNT
    for duration in durations:
        counts[ms_buckets.bucket_of(duration)] += 1
    return counts


def test_percentile_series_follow_each_slots_histogram() -> None:
    fast = histogram_of(*[120] * 98, 900, 2500)  # 98 jobs at 120 ms, one slow, one slower
    series = percentile_series([fast, None, histogram_of()])
    assert [key for key, _, _ in series] == ["p50", "p95", "p99"]
    p50, p95, p99 = (values for _, _, values in series)
    assert 100 <= p50[0] <= 150 and 100 <= p95[0] <= 150 and 700 <= p99[0] <= 1000
    assert p50[1:] == [None, None]  # no histogram, no samples: gaps
    assert percentile_series([fast], scale=1000)[0][2][0] == pytest.approx(p50[0] / 1000, abs=1e-3)


def test_a_duration_chart_draws_three_percentile_lines_in_ms_or_seconds() -> None:
    chart = duration_chart("run", [histogram_of(100, 200), histogram_of(300)], LABELS)
    assert [line.css for line in chart.lines] == [
        "qless-series-p50", "qless-series-p95", "qless-series-p99"]
    assert chart.y_ticks[-1].label.endswith(" ms") and chart.y_title == "run time, ms"
    slow = duration_chart("wait", [histogram_of(4000, 9000)], LABELS, what="wait time")
    assert slow.y_ticks[-1].label.endswith(" s") and slow.y_title == "wait time, s"


@pytest.mark.parametrize(("low", "high", "text"), [
    (0, 1, "0\u20131 ms"), (100, 150, "100\u2013150 ms"), (700, 1000, "700\u20131000 ms"),
    (1500, 2000, "1.5\u20132 s"), (50_000, 70_000, "50\u201370 s"),
    (3_000_000, 3_600_000, "50\u201360 min"), (3_600_000, None, "over 1 h"),
])
def test_bucket_ranges_read_in_their_own_unit(low: float, high: float | None, text: str) -> None:
    assert duration_range(low, high) == text


def test_a_millisecond_histogram_spans_its_data_in_adapted_bars() -> None:
    chart = ms_histogram("run", histogram_of(*[138] * 30, 160, 400))
    labels = [bar.label for bar in chart.bars]
    assert labels[0] == "100\u2013150 ms" and labels[-1] == "300\u2013500 ms"
    assert [bar.count for bar in chart.bars] == [30, 1, 0, 1]
    assert chart.peak == 30 and chart.y_ticks[-1].label == "50"
    tall = chart.bars[0]
    assert tall.y + tall.height == HEIGHT - BOTTOM and tall.y == y_of(30, 50)
    assert "30 in 100\u2013150 ms" in chart.summary
    # Bars side by side over the plot, none overlapping.
    assert all(a.x + a.width < b.x for a, b in zip(chart.bars, chart.bars[1:], strict=False))
    wide = ms_histogram("run", histogram_of(1, 3_000_000))
    assert len(wide.bars) <= 24 and len(wide.x_ticks) <= 8


def test_qless_second_buckets_are_one_bar_each_honestly_labelled() -> None:
    histogram = [0] * 148
    histogram[0], histogram[3], histogram[61] = 40, 2, 1
    assert [qless_range(i) for i in (0, 59, 60, 118, 119, 142, 147)] == [
        "0\u20131 s", "59\u201360 s", "1\u20132 min", "59\u201360 min", "1\u20132 h",
        "1\u20132 d", "6\u20137 d"]
    chart = qless_histogram("wait", histogram)
    assert chart is not None and len(chart.bars) == 62 and chart.bars[3].count == 2
    short = qless_histogram("run", [5] + [0] * 147)
    assert short is not None and len(short.bars) == 10  # 0 to 10 s at least
    assert qless_histogram("run", [0] * 148) is None
