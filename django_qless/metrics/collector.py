"""`QlessCollector`: a prometheus_client collector reading every configured connection."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate

import redis
from django.db import DatabaseError
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ..conf import get_settings
from ..connection import get_client
from ..core import QlessError, Timing
from ..outbox.backlog import Backlog, backlog
from ..outbox.tables import outbox_databases, ready
from ..registry import registry
from .functions import bounded, run_buckets
from .readings import Reading, read

logger = logging.getLogger(__name__)

#: Queue states reported by `qless_queue_jobs`.
STATES = ("waiting", "running", "stalled", "scheduled", "depends", "recurring")

#: Histogram bucket bounds (seconds). Each is the upper end of one of qless's own buckets
#: (whole seconds below a minute, whole minutes below an hour, then hours, then days), so
#: the cumulative counts are exact.
BOUNDS = (1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)


def qless_bucket_bounds() -> list[int]:
    """The upper end, in seconds, of each of the 148 buckets of a qless stats histogram."""
    return [
        *(second + 1 for second in range(60)),
        *((minute + 1) * 60 for minute in range(1, 60)),
        *((hour + 1) * 3600 for hour in range(1, 24)),
        *((day + 1) * 86400 for day in range(1, 7)),
    ]


QLESS_BOUNDS = qless_bucket_bounds()


def buckets(timing: Timing) -> list[tuple[str, float]]:
    """Cumulative Prometheus buckets (`le`, count) from a qless histogram."""
    cumulative = list(accumulate(timing.histogram))
    by_bound = dict(zip(QLESS_BOUNDS, cumulative, strict=False))
    pairs: list[tuple[str, float]] = [
        (str(float(bound)), by_bound.get(bound, 0)) for bound in BOUNDS
    ]
    # The total, not the histogram's sum: a sample above qless's last bucket is counted too.
    pairs.append(("+Inf", timing.count))
    return pairs


class QlessCollector(Collector):
    """Reads each connection at scrape time; a connection that fails reports `qless_up 0`."""

    def __init__(self, connections: Callable[[], Sequence[str]],
                 reader: Callable[[str], Reading],
                 outbox: Callable[[], Sequence[Backlog]] = lambda: ()) -> None:
        self.connections = connections
        self.reader = reader
        self.outbox = outbox

    def collect(self) -> Iterator[Metric]:
        """Every qless metric family, labelled by connection alias."""
        families = Families()
        for alias in self.connections():
            try:
                reading = self.reader(alias)
            except (redis.RedisError, QlessError, OSError, UnicodeDecodeError) as exc:
                # UnicodeDecodeError: another client named a queue or group with bytes that
                # are not UTF-8; the other connections are still reported.
                logger.warning("qless metrics: connection %r could not be read: %s", alias, exc)
                families.up.add_metric([alias], 0)
                continue
            families.up.add_metric([alias], 1)
            families.add(alias, reading)
        try:
            backlogs = self.outbox()
        except DatabaseError as exc:
            logger.warning("qless metrics: the outbox could not be read: %s", exc)
            backlogs = ()
        for waiting in backlogs:
            families.outbox_rows.add_metric([waiting.database], waiting.rows)
            families.outbox_age.add_metric([waiting.database], waiting.oldest_age or 0.0)
        yield from families.all()


class Families:
    """The metric families of one scrape, filled connection by connection."""

    def __init__(self) -> None:
        self.up = GaugeMetricFamily(
            "qless_up", "1 when the connection's Redis could be read", labels=["connection"])
        self.jobs = GaugeMetricFamily(
            "qless_queue_jobs", "Jobs in the queue, by state",
            labels=["connection", "queue", "state"])
        self.latency = GaugeMetricFamily(
            "qless_queue_latency_seconds",
            "How long the job the queue hands out next has waited (0 when none waits)",
            labels=["connection", "queue"])
        self.paused = GaugeMetricFamily(
            "qless_queue_paused", "1 when the queue is paused", labels=["connection", "queue"])
        self.completed = CounterMetricFamily(
            "qless_jobs_completed", "Jobs completed today (UTC); resets at midnight UTC",
            labels=["connection", "queue"])
        self.failures = CounterMetricFamily(
            "qless_jobs_failed", "Job failures today (UTC); resets at midnight UTC",
            labels=["connection", "queue"])
        self.retries = CounterMetricFamily(
            "qless_jobs_retried", "Jobs retried today (UTC); resets at midnight UTC",
            labels=["connection", "queue"])
        self.groups = GaugeMetricFamily(
            "qless_failure_group_jobs", "Failed jobs held in each failure group",
            labels=["connection", "group"])
        self.workers = GaugeMetricFamily(
            "qless_workers", "Workers qless knows (seen within max-worker-age)",
            labels=["connection"])
        self.alive = GaugeMetricFamily(
            "qless_workers_alive", "Workers seen (pop or heartbeat) within one lease",
            labels=["connection"])
        self.wait = HistogramMetricFamily(
            "qless_job_wait_seconds", "Time jobs waited before a worker popped them, today (UTC)",
            labels=["connection", "queue"])
        self.run = HistogramMetricFamily(
            "qless_job_run_seconds", "Time from pop to completion, today (UTC)",
            labels=["connection", "queue"])
        self.fn_executions = CounterMetricFamily(
            "qless_function_executions",
            "Executions of each job function counted by qless_worker processes (ever)",
            labels=["connection", "klass"])
        self.fn_failures = CounterMetricFamily(
            "qless_function_failures", "Executions of each job function that failed for good",
            labels=["connection", "klass"])
        self.fn_retries = CounterMetricFamily(
            "qless_function_retries",
            "Executions of each job function that failed and were put back for a retry",
            labels=["connection", "klass"])
        self.fn_run = HistogramMetricFamily(
            "qless_function_run_seconds", "How long each job function's executions ran",
            labels=["connection", "klass"])
        self.outbox_rows = GaugeMetricFamily(
            "qless_outbox_rows", "On-commit enqueues not yet put into Redis (outbox rows)",
            labels=["database"])
        self.outbox_age = GaugeMetricFamily(
            "qless_outbox_oldest_age_seconds", "Age of the oldest outbox row (0 when empty)",
            labels=["database"])

    def add(self, alias: str, reading: Reading) -> None:
        """Add one connection's figures."""
        for counts in reading.queues:
            for state in STATES:
                self.jobs.add_metric([alias, counts.name, state], getattr(counts, state))
            self.paused.add_metric([alias, counts.name], int(counts.paused))
            self.latency.add_metric([alias, counts.name], reading.latencies.get(counts.name, 0.0))
        for queue, stats in reading.stats.items():
            labels = [alias, queue]
            self.completed.add_metric(labels, stats.run.count)
            self.failures.add_metric(labels, stats.failures)
            self.retries.add_metric(labels, stats.retries)
            self.wait.add_metric(labels, buckets(stats.wait), stats.wait.mean * stats.wait.count)
            self.run.add_metric(labels, buckets(stats.run), stats.run.mean * stats.run.count)
        for group, count in reading.failure_groups.items():
            self.groups.add_metric([alias, group], count)
        for klass, figures in sorted(bounded(reading.functions, registry.__contains__).items()):
            labels = [alias, klass]
            self.fn_executions.add_metric(labels, figures.executions)
            self.fn_failures.add_metric(labels, figures.failures)
            self.fn_retries.add_metric(labels, figures.retries)
            self.fn_run.add_metric(labels, run_buckets(figures), figures.run_ms / 1000)
        self.workers.add_metric([alias], reading.workers_known)
        self.alive.add_metric([alias], reading.workers_alive)

    def all(self) -> Iterable[Metric]:
        """The families, in a stable order."""
        return (self.up, self.jobs, self.latency, self.paused, self.completed, self.failures,
                self.retries, self.groups, self.workers, self.alive, self.wait, self.run,
                self.fn_executions, self.fn_failures, self.fn_retries, self.fn_run,
                self.outbox_rows, self.outbox_age)


def default_collector() -> QlessCollector:
    """A collector over every connection in `QLESS['CONNECTIONS']`."""
    return QlessCollector(lambda: list(get_settings().connections),
                          lambda alias: read(get_client(alias)), outbox_backlogs)


def outbox_backlogs() -> list[Backlog]:
    """The outbox backlog of every database that holds the table (none when it is off)."""
    if not get_settings().outbox.enabled:
        return []
    return [backlog(alias) for alias in outbox_databases() if ready(alias)]
