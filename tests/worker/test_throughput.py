"""The worker counts what it finished by queue and outcome and adds it to the live overview's
minutes with its presence publication; it samples queue depths once a minute per Redis."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from django_qless.core import Client
from django_qless.core.live import History, read_history
from django_qless.worker import Worker
from django_qless.worker.presence import PresenceReporter
from django_qless.worker.throughput import Tally

from .conftest import WorkerProcess


def totals(client: Client) -> dict[tuple[str, str], int]:
    """(queue, outcome) -> jobs over the whole hour."""
    found: dict[tuple[str, str], int] = {}
    for minute in read_history(client, time.time()).minutes:
        for queue, outcomes in minute.finished.items():
            for outcome, jobs in outcomes.items():
                found[queue, outcome] = found.get((queue, outcome), 0) + jobs
    return found


def reporter(client: Client, tally: Tally) -> PresenceReporter:
    """A presence reporter with nothing running."""
    return PresenceReporter(client, ("q",), lambda: None, lambda: (0, 0), tally)


def test_a_worker_adds_its_outcomes_by_queue(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    put("worker.noop")
    put("worker.noop")
    put("worker.fail")
    put("worker.flaky", retries=2)  # fails, put back for a retry 10 s later
    put("worker.noop", queue="other")
    run_worker("q", "other")
    found = totals(qless)
    assert found[("q", "completed")] == 2 and found[("other", "completed")] == 1
    assert found[("q", "retried")] == 1 and found[("q", "failed")] == 1


def test_process_isolation_counts_in_the_parent(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    put("worker.noop")
    put("worker.fail")
    run_worker("q", isolation="process")
    assert totals(qless) == {("q", "completed"): 1, ("q", "failed"): 1}


def test_the_run_time_of_finished_jobs_is_added(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    put("worker.sleep", 0.3)
    put("worker.noop")
    run_worker("q")
    ran = sum(minute.ran_ms("q") for minute in read_history(qless, time.time()).minutes)
    assert 300 <= ran < 1500


def test_each_process_of_a_supervised_worker_adds_its_own(
    qless: Client, put: Callable[..., str], spawn: Callable[..., WorkerProcess]
) -> None:
    for _ in range(6):
        put("worker.noop")
    worker = spawn("q", "--processes", "2", "--burst")
    assert worker.wait() == 0, worker.output()
    assert totals(qless) == {("q", "completed"): 6}


def test_the_publication_adds_the_counts_and_samples_depth_once(
    qless: Client, put: Callable[..., str], redis_client: redis.Redis
) -> None:
    put("worker.noop")
    tally = Tally()
    tally.count("q", "completed")
    tally.count("q", "handed back")  # not an outcome the overview shows
    first, second = reporter(qless, tally), reporter(qless, Tally())
    first.maybe_publish()
    second.maybe_publish()
    assert totals(qless) == {("q", "completed"): 1}
    history: History = read_history(qless, time.time())
    assert history.minutes[-1].depth("waiting", "q") == 1
    assert tally.take() == {}  # added once, not again


def test_counts_survive_a_failed_publication(
    qless: Client, redis_server: object
) -> None:
    unreachable = Client(redis.Redis(port=1, socket_connect_timeout=0.2), worker_name="w")
    tally = Tally()
    tally.count("q", "failed", 0.25)
    reporter(unreachable, tally).maybe_publish()  # logged, not raised
    assert tally.take() == {("q", "failed"): 1, ("q", "ms"): 250}  # kept for the next one
