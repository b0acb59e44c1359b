"""The overview's last hour: throughput, failure-rate and depth charts, totals, one row per queue.

Built from `core.live.History` (one Redis round trip): throughput counts what
`qless_worker` processes finished, depth samples what every queue held once a minute.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import timezone

from ..core import QueueCounts
from ..core.live import DEPTH_STATES, History, Minute
from .charts import Chart, line_chart, sparkline, stacked_bars

#: Throughput segments, bottom up: (outcome, legend name). "retried" is a failed attempt
#: put back for another; "failed" a job that failed for good.
FINISHED = (("completed", "completed"), ("retried", "retried"), ("failed", "failed"))
#: Minutes between two labels under the charts.
LABEL_EVERY = 10
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

    @property
    def throughput_summary(self) -> str:
        """The throughput chart in words."""
        t = self.totals
        return (f"Last hour: {t.hour_completed} completed, {t.hour_failed} failed, "
                f"{t.hour_retried} retried; the last bar is the current minute, still "
                "filling up.")

    @property
    def depth_summary(self) -> str:
        """The depth chart in words: the latest sample."""
        latest = next((figures for figures in self.figures
                       if any(depth is not None for depth in figures.depths)), None)
        if latest is None:
            return ""
        counts = ", ".join(f"{depth} {state}" for state, depth
                           in zip(self.depth_states, latest.depths, strict=True))
        return f"Sampled once a minute; at {latest.label}: {counts}."


def rate(completed: int, failed: int) -> float | None:
    """Percent failed of all finished; None when nothing finished."""
    total = completed + failed
    return None if not total else round(100 * failed / total, 1)


def clock_time(minute: Minute) -> str:
    """The minute's start in the current time zone, as HH:MM."""
    started = dt.datetime.fromtimestamp(minute.start, tz=dt.timezone.utc)
    return timezone.localtime(started).strftime("%H:%M")


def axis_labels(count: int) -> dict[int, str]:
    """Labels under every `LABEL_EVERY`-th slot, counted back from the last ("now")."""
    return {count - 1 - back: "now" if back == 0 else f"\u2212{back} min"
            for back in range(0, count, LABEL_EVERY)}


def finished_in(minute: Minute, queue: str | None) -> dict[str, int]:
    """Jobs finished in the minute by outcome."""
    return {outcome: minute.jobs(outcome, queue) for outcome, _ in FINISHED}


def build(history: History, queues: Sequence[QueueCounts], queue: str | None) -> LiveOverview:
    """The live section of the overview, for every queue or the one chosen."""
    minutes = history.minutes
    labels = axis_labels(len(minutes))
    where = f"queue {queue}" if queue else "all queues"
    slots = [finished_in(minute, queue) for minute in minutes]
    names = [f"{clock_time(minute)}{' (so far)' if minute is minutes[-1] else ''}"
             for minute in minutes]
    throughput = stacked_bars(
        f"Jobs finished per minute over the last hour, {where}", slots, FINISHED, names,
        labels, partial_last=True,
    )
    rates = [rate(slot["completed"], slot["failed"] + slot["retried"]) for slot in slots]
    failure_rate = line_chart(
        f"Failure rate per minute over the last hour, {where}",
        [("rate", "failed or retried, % of finished", rates)], labels, unit="%", ceiling=100,
    )
    run_time = run_time_chart(minutes, slots, queue, labels, where)
    depth = line_chart(
        f"Jobs in each state, sampled once a minute over the last hour, {where}",
        [(state, state, [minute.depth(state, queue) for minute in minutes])
         for state in DEPTH_STATES], labels,
    )
    rows = queue_rows(history, queues)
    return LiveOverview(
        queue=queue,
        queues=tuple(sorted({q.name for q in queues} | set(history.queues()))),
        totals=totals(slots),
        throughput=throughput, failure_rate=failure_rate, run_time=run_time, depth=depth,
        has_throughput=any(sum(slot.values()) for slot in slots),
        has_depth=any(minute.depths for minute in minutes),
        rows=tuple(rows[:QUEUE_ROWS]), rows_total=len(rows),
        figures=figures(minutes, slots, queue),
    )


def run_time_chart(minutes: Sequence[Minute], slots: Sequence[dict[str, int]],
                   queue: str | None, labels: dict[int, str], where: str) -> Chart:
    """Average run time of the jobs finished each minute, in ms or, when longer, seconds."""
    averages = [minute.ran_ms(queue) / sum(slot.values()) if sum(slot.values()) else None
                for minute, slot in zip(minutes, slots, strict=True)]
    longest = max((average for average in averages if average is not None), default=0.0)
    unit, scale = (" ms", 1.0) if longest < 1000 else (" s", 1000.0)
    return line_chart(
        f"Average run time of the jobs finished each minute over the last hour, {where}",
        [("run", "average run time", [None if average is None else average / scale
                                      for average in averages])], labels, unit=unit,
    )


def totals(slots: Sequence[dict[str, int]]) -> Totals:
    """Headline figures from the hour's slots (the last one still filling up)."""
    done = slots[:-1]
    recent = done[-RECENT:]
    return Totals(
        this_minute=sum(slots[-1].values()),
        last_completed=done[-1]["completed"] if done else 0,
        last_failed=done[-1]["failed"] if done else 0,
        last_retried=done[-1]["retried"] if done else 0,
        recent_per_minute=round(sum(sum(slot.values()) for slot in recent)
                                / max(len(recent), 1), 1),
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
