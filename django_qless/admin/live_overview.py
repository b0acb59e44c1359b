"""The overview's live section: throughput, failure-rate, run-time and depth charts over the
last hour, day or week, with deploy markers, totals, and one row per queue.

Built from `core.live.History` (one Redis round trip): throughput counts what
`qless_worker` processes finished, depth samples what every queue held once a minute
(the first sample of each 15 minutes and hour for the longer ranges).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import timezone

from ..core import QueueCounts
from ..core.deploys import Deploy
from ..core.live import DEPTH_STATES, SPANS, History, Minute, Span
from .charts import Chart, deploy_places, duration_chart, line_chart, sparkline, stacked_bars

#: Throughput segments, bottom up: (outcome, legend name). "retried" is a failed attempt
#: put back for another; "failed" a job that failed for good.
FINISHED = (("completed", "completed"), ("retried", "retried"), ("failed", "failed"))
#: Minutes between two labels under the charts, by range: every 10 minutes of the hour,
#: 3 hours of the day, midnight of the week.
LABEL_EVERY = {"1h": 10, "24h": 180, "7d": 1440}
#: Most queues listed under the charts, the busiest first (the queue table lists them all).
QUEUE_ROWS = 20
#: Minutes averaged for the "recent" rate.
RECENT = 5


@dataclass(frozen=True)
class QueueRow:
    """One queue's hour: jobs finished each way, its failure rate and a sparkline."""

    name: str
    completed: int
    failed: int
    retried: int
    last_minute: int
    waiting: int
    per_minute: tuple[int, ...]
    run_ms: int = 0

    @property
    def spark(self) -> str:
        """The sparkline of jobs finished per minute (drawn only for the rows shown)."""
        return sparkline(self.per_minute)

    @property
    def spark_peak(self) -> int:
        """Most jobs finished in one minute of the hour."""
        return max(self.per_minute, default=0)

    @property
    def finished(self) -> int:
        """Jobs finished in the hour, every outcome."""
        return self.completed + self.failed + self.retried

    @property
    def failure_rate(self) -> float | None:
        """Percent of the hour's finished jobs that failed (for good or retried)."""
        return rate(self.completed, self.failed + self.retried)

    @property
    def average_run(self) -> float | None:
        """Seconds the hour's finished jobs ran on average; None when none finished."""
        return self.run_ms / self.finished / 1000 if self.finished else None


@dataclass(frozen=True)
class MinuteFigures:
    """One minute as the data table under the charts lists it."""

    label: str
    completed: int
    retried: int
    failed: int
    depths: tuple[int | None, ...]
    #: Seconds the minute's finished jobs ran on average; None when none finished.
    average_run: float | None = None


@dataclass(frozen=True)
class Totals:
    """The headline figures: this minute so far, the last full minute, recent rate, the hour."""

    this_minute: int
    last_completed: int
    #: Jobs of the last full minute that failed for good, and failed attempts put back.
    last_failed: int
    last_retried: int
    recent_per_minute: float
    hour_completed: int
    hour_failed: int
    hour_retried: int

    @property
    def hour_failure_rate(self) -> float | None:
        """Percent of the hour's finished jobs that failed (for good or retried)."""
        return rate(self.hour_completed, self.hour_failed + self.hour_retried)


@dataclass(frozen=True)
class LiveOverview:
    """Everything the overview's live section draws."""

    queue: str | None
    queues: tuple[str, ...]
    totals: Totals
    throughput: Chart
    failure_rate: Chart
    run_time: Chart
    depth: Chart
    has_throughput: bool
    has_depth: bool
    rows: tuple[QueueRow, ...]
    rows_total: int
    figures: tuple[MinuteFigures, ...]
    depth_states: tuple[str, ...] = DEPTH_STATES
    recent_minutes: int = RECENT
    span: Span = SPANS["1h"]
    #: The deploys drawn on the charts, in words ("v42 at 14:05"), oldest first.
    deploys: tuple[str, ...] = ()
    #: Whether the run-time chart draws p50/p95/p99 (else the average).
    percentiles: bool = False
    #: p50/p95/p99 of the time the jobs waited, where workers record it (else None).
    wait_time: Chart | None = None

    @property
    def wait_time_summary(self) -> str:
        """The wait-time chart in words."""
        return (f"The median, 95th and 99th percentile of how long the jobs popped each "
                f"{self.span.slot_words} waited in their queue; no point where none was popped.")

    @property
    def empty_throughput(self) -> str:
        """What the throughput chart says when nothing finished in the range."""
        return f"No job finished in the {self.span.words} by a qless_worker process."

    @property
    def failure_rate_summary(self) -> str:
        """The failure-rate chart in words."""
        return (f"Share of the jobs finished each {self.span.slot_words} that failed, for "
                "good or to be retried; no point where no job finished.")

    @property
    def run_time_caption(self) -> str:
        """The run-time chart's title: percentiles once recorded, else the average."""
        return "Run time, p50 / p95 / p99" if self.percentiles else "Average run time"

    @property
    def run_time_summary(self) -> str:
        """The run-time chart in words."""
        what = ("The median, 95th and 99th percentile of how long" if self.percentiles
                else "How long, on average,")
        return (f"{what} the jobs finished each {self.span.slot_words} ran in the worker; "
                "no point where no job finished.")

    @property
    def recent_words(self) -> str:
        """The time the "recent" rate averages over, in words."""
        minutes = self.recent_minutes * self.span.seconds // 60
        return f"{minutes} minutes" if minutes < 120 else f"{minutes // 60} hours"

    @property
    def spans(self) -> tuple[Span, ...]:
        """Every range the charts can show, for the range control."""
        return tuple(SPANS.values())

    @property
    def throughput_summary(self) -> str:
        """The throughput chart in words."""
        t = self.totals
        return (f"{self.span.words.capitalize()}: {t.hour_completed} completed, "
                f"{t.hour_failed} failed, {t.hour_retried} retried; the last bar is the "
                f"current {self.span.slot_words}, still filling up.")

    @property
    def depth_summary(self) -> str:
        """The depth chart in words: the latest sample."""
        latest = next((figures for figures in self.figures
                       if any(depth is not None for depth in figures.depths)), None)
        if latest is None:
            return ""
        counts = ", ".join(f"{depth} {state}" for state, depth
                           in zip(self.depth_states, latest.depths, strict=True))
        every = "a minute" if self.span.seconds == 60 else f"each {self.span.slot_words}"
        return f"Sampled once {every}; at {latest.label}: {counts}."


def rate(completed: int, failed: int) -> float | None:
    """Percent failed of all finished; None when nothing finished."""
    total = completed + failed
    return None if not total else round(100 * failed / total, 1)


def local(at: float) -> dt.datetime:
    """Epoch seconds in the current time zone."""
    return timezone.localtime(dt.datetime.fromtimestamp(at, tz=dt.timezone.utc))


def clock_time(minute: Minute) -> str:
    """The slot's start in the current time zone: HH:MM, with the day for hourly slots."""
    return local(minute.start).strftime("%a %d %H:%M" if minute.seconds >= 3600 else "%H:%M")


def axis_labels(count: int, minutes: Sequence[Minute] = (), span: str = "1h"
                ) -> dict[int, str]:
    """Labels under the slots starting on a round local time (every 10 minutes of the hour,
    3 hours of the day, each midnight of the week), as clock times or days.

    Without slots (or where no slot starts on one, in an odd time zone) every
    `LABEL_EVERY` minutes counted back from the last, as "\u221210 min".
    """
    every = LABEL_EVERY[span]
    labels = {}
    for index, minute in enumerate(minutes):
        started = local(minute.start)
        if (started.hour * 60 + started.minute) % every == 0:
            labels[index] = started.strftime("%a %d" if every >= 1440 else "%H:%M")
    if len(labels) >= 2:
        return labels
    step = max(1, every * 60 // (minutes[0].seconds if minutes else 60))
    return {count - 1 - back: "now" if back == 0 else f"\u2212{back * every // step} min"
            for back in range(0, count, step)}


def finished_in(minute: Minute, queue: str | None) -> dict[str, int]:
    """Jobs finished in the minute by outcome."""
    return {outcome: minute.jobs(outcome, queue) for outcome, _ in FINISHED}


def build(history: History, queues: Sequence[QueueCounts], queue: str | None,
          deploys: Sequence[Deploy] = (),
          run_histograms: Sequence[Sequence[int] | None] | None = None,
          wait_histograms: Sequence[Sequence[int] | None] | None = None) -> LiveOverview:
    """The live section of the overview, for every queue or the one chosen, over the
    history's span, with `deploys` marked on every chart.

    With `run_histograms` (one `ms_buckets` histogram of run times per slot, aligned with
    the history's, None where unknown) the run-time chart draws p50/p95/p99 lines rather
    than the average; with `wait_histograms` a wait-time chart is drawn the same way.
    """
    minutes, span = history.minutes, history.span
    labels = axis_labels(len(minutes), minutes, span.name)
    places = deploy_places(deploys, minutes[0].start, minutes[0].seconds) if minutes else []
    where = f"queue {queue}" if queue else "all queues"
    per, over = f"per {span.slot_words}", f"over the {span.words}"
    slots = [finished_in(minute, queue) for minute in minutes]
    names = [f"{clock_time(minute)}{' (so far)' if minute is minutes[-1] else ''}"
             for minute in minutes]
    throughput = stacked_bars(
        f"Jobs finished {per} {over}, {where}", slots, FINISHED, names,
        labels, partial_last=True, deploys=places, y_title=f"jobs {per}",
    )
    rates = [rate(slot["completed"], slot["failed"] + slot["retried"]) for slot in slots]
    failure_rate = line_chart(
        f"Failure rate {per} {over}, {where}",
        [("rate", "failed or retried, % of finished", rates)], labels, unit="%", ceiling=100,
        deploys=places, y_title="% of jobs finished",
    )
    if run_histograms is not None:
        run_time = duration_chart(
            f"Run time percentiles of the jobs finished each {span.slot_words} {over}, "
            f"{where}", run_histograms, labels, places)
    else:
        run_time = run_time_chart(minutes, slots, queue, labels, where, places)
    depth = line_chart(
        f"Jobs in each state, sampled once "
        f"{'a minute' if span.seconds == 60 else 'each ' + span.slot_words} {over}, {where}",
        [(state, state, [minute.depth(state, queue) for minute in minutes])
         for state in DEPTH_STATES], labels, deploys=places, y_title="jobs",
    )
    rows = queue_rows(history, queues)
    return LiveOverview(
        queue=queue,
        queues=tuple(sorted({q.name for q in queues} | set(history.queues()))),
        totals=totals(slots, span.seconds),
        throughput=throughput, failure_rate=failure_rate, run_time=run_time, depth=depth,
        has_throughput=any(sum(slot.values()) for slot in slots),
        has_depth=any(minute.depths for minute in minutes),
        rows=tuple(rows[:QUEUE_ROWS]), rows_total=len(rows),
        figures=figures(minutes, slots, queue), span=span,
        deploys=tuple(f"{deploy.label} at {local(deploy.at):%a %d %H:%M}"
                      for deploy in deploys),
        percentiles=run_histograms is not None,
        wait_time=None if wait_histograms is None else duration_chart(
            f"Wait time percentiles of the jobs popped each {span.slot_words} {over}, {where}",
            wait_histograms, labels, places, what="wait time"),
    )


def run_time_chart(minutes: Sequence[Minute], slots: Sequence[dict[str, int]],
                   queue: str | None, labels: dict[int, str], where: str,
                   deploys: Sequence[tuple[float, str]] = ()) -> Chart:
    """Average run time of the jobs finished each slot, in ms or, when longer, seconds."""
    averages = [minute.ran_ms(queue) / sum(slot.values()) if sum(slot.values()) else None
                for minute, slot in zip(minutes, slots, strict=True)]
    longest = max((average for average in averages if average is not None), default=0.0)
    unit, scale = ("ms", 1.0) if longest < 1000 else ("s", 1000.0)
    slot = minutes[-1].seconds if minutes else 60
    span = next((span for span in SPANS.values() if span.seconds == slot), SPANS["1h"])
    return line_chart(
        f"Average run time of the jobs finished each {span.slot_words} over the "
        f"{span.words}, {where}",
        [("run", "average run time", [None if average is None else average / scale
                                      for average in averages])], labels, unit=f" {unit}",
        deploys=deploys, y_title=f"average run time, {unit}",
    )


def totals(slots: Sequence[dict[str, int]], seconds: int = 60) -> Totals:
    """Headline figures from the span's slots of `seconds` each (the last one still filling
    up); the recent rate is per minute whatever the slots."""
    done = slots[:-1]
    recent = done[-RECENT:]
    return Totals(
        this_minute=sum(slots[-1].values()),
        last_completed=done[-1]["completed"] if done else 0,
        last_failed=done[-1]["failed"] if done else 0,
        last_retried=done[-1]["retried"] if done else 0,
        recent_per_minute=round(sum(sum(slot.values()) for slot in recent)
                                / max(len(recent), 1) / (seconds // 60), 1),
        hour_completed=sum(slot["completed"] for slot in slots),
        hour_failed=sum(slot["failed"] for slot in slots),
        hour_retried=sum(slot["retried"] for slot in slots),
    )


def queue_rows(history: History, queues: Sequence[QueueCounts]) -> list[QueueRow]:
    """A row per queue known now or active in the hour, the busiest first."""
    waiting = {q.name: q.waiting for q in queues}
    count = len(history.minutes)
    hour: dict[str, dict[str, int]] = {name: {} for name in waiting}
    per_minute: dict[str, list[int]] = {name: [0] * count for name in waiting}
    run_ms: dict[str, int] = {}
    for index, minute in enumerate(history.minutes):  # one pass over what was read
        for name, ran in minute.run_ms.items():
            run_ms[name] = run_ms.get(name, 0) + ran
        for name, by_outcome in minute.finished.items():
            totals = hour.setdefault(name, {})
            for outcome, jobs in by_outcome.items():
                totals[outcome] = totals.get(outcome, 0) + jobs
            per_minute.setdefault(name, [0] * count)[index] = sum(by_outcome.values())
    for name in history.queues():
        hour.setdefault(name, {})
        per_minute.setdefault(name, [0] * count)
    rows = [
        QueueRow(
            name=name, completed=totals.get("completed", 0), failed=totals.get("failed", 0),
            retried=totals.get("retried", 0),
            last_minute=per_minute[name][-2] if count > 1 else 0,
            waiting=waiting.get(name, 0), per_minute=tuple(per_minute[name]),
            run_ms=run_ms.get(name, 0),
        )
        for name, totals in hour.items()
    ]
    rows.sort(key=lambda row: (-row.finished, -row.waiting, row.name))
    return rows


def figures(minutes: Sequence[Minute], slots: Sequence[dict[str, int]], queue: str | None
            ) -> tuple[MinuteFigures, ...]:
    """The minutes with anything to show, newest first, for the table under the charts."""
    found = []
    for minute, slot in zip(minutes, slots, strict=True):
        depths = tuple(minute.depth(state, queue) for state in DEPTH_STATES)
        jobs = sum(slot.values())
        if jobs or minute.depths is not None:
            found.append(MinuteFigures(
                clock_time(minute), slot["completed"], slot["retried"], slot["failed"], depths,
                minute.ran_ms(queue) / jobs / 1000 if jobs else None,
            ))
    return tuple(reversed(found))
