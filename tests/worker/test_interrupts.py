"""Stopping running jobs: time limits, lock loss (timeout, tampering), cancel; heartbeats."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from django_qless.core import Client
from django_qless.worker import Worker
from tests.support import wait_for

from .conftest import SignalLog, in_thread, job_state

Ledger = Callable[[], list[dict[str, Any]]]


def events_of(ledger: Ledger, jid: str) -> list[str]:
    """The ledger events of one job, in order."""
    return [entry["event"] for entry in ledger() if entry["jid"] == jid]


@pytest.mark.parametrize("klass", ["worker.slow_limited", "worker.spin"])
def test_job_over_its_time_limit_is_stopped_and_failed(
    klass: str, qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Ledger,
) -> None:
    jid = put(klass)
    started = time.monotonic()
    run_worker("q")
    assert time.monotonic() - started < 4.0
    job = qless.get_job(jid)
    assert job is not None and job.state == "failed"
    assert job.failure is not None and job.failure.group == "q-TimeLimitExceeded"
    assert events_of(ledger, jid) == ["start"]


def test_worker_time_limit_applies_to_jobs_without_their_own(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker], ledger: Ledger
) -> None:
    slow = put("worker.swallow", 10)  # swallows Exception, not the interruption
    quick = put("worker.sleep", 0.01)
    started = time.monotonic()
    run_worker("q", time_limit=0.3)
    assert time.monotonic() - started < 4.0
    job = qless.get_job(slow)
    assert job is not None and job.failure is not None
    assert job.failure.group == "q-TimeLimitExceeded"
    assert events_of(ledger, slow) == ["start"]
    assert job_state(qless, quick) == "complete"


def test_time_limit_is_retried_when_the_policy_covers_it(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker], sent: SignalLog
) -> None:
    jid = put("worker.slow_limited_retried", retries=2)
    run_worker("q")
    job = qless.get_job(jid)
    assert job is not None and job.state == "scheduled"
    assert job.remaining == 1
    assert job.failure is not None and job.failure.group == "q-TimeLimitExceeded"
    assert sent.of("job_retried")[0]["delay"] == 5


def test_lock_lost_by_timeout_stops_the_job_and_the_worker_goes_on(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Ledger, sent: SignalLog,
) -> None:
    jid = put("worker.sleep_first", 5)
    after = put("worker.mark", "after")

    def time_it_out() -> None:
        wait_for(lambda: events_of(ledger, jid) == ["start"])
        qless.timeout(jid)

    in_thread(time_it_out)
    started = time.monotonic()
    run_worker("q")
    assert time.monotonic() - started < 4.0  # not the 5 s of the first execution
    # The first execution stopped without an end; the job went back to the queue and
    # the worker ran it again (quickly), then the other job.
    assert events_of(ledger, jid) == ["start", "start", "end"]
    assert job_state(qless, jid) == "complete"
    assert job_state(qless, after) == "complete"
    lost = sent.of("job_lock_lost")
    assert [kw["jid"] for kw in lost] == [jid]
    assert lost[0]["reason"] == "lock_lost"
    job = qless.get_job(jid)
    assert job is not None
    assert [h.what for h in job.history].count("timed-out") == 1
    assert [h.what for h in job.history].count("done") == 1


def test_cancel_while_running_stops_the_job(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Ledger, sent: SignalLog,
) -> None:
    jid = put("worker.sleep", 5)
    after = put("worker.mark", "after")

    def cancel() -> None:
        wait_for(lambda: events_of(ledger, jid) == ["start"])
        qless.cancel(jid)

    in_thread(cancel)
    started = time.monotonic()
    run_worker("q")
    assert time.monotonic() - started < 4.0
    assert events_of(ledger, jid) == ["start"]
    assert qless.get_job(jid) is None
    assert job_state(qless, after) == "complete"
    assert [kw["reason"] for kw in sent.of("job_lock_lost")] == ["canceled"]
    assert "job_completed" in sent.names()  # the other job


def test_moving_a_running_job_stops_it(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Ledger, sent: SignalLog,
) -> None:
    jid = put("worker.sleep", 5)

    def move() -> None:
        wait_for(lambda: events_of(ledger, jid) == ["start"])
        job = qless.get_job(jid)
        assert job is not None
        job.move("elsewhere")

    in_thread(move)
    started = time.monotonic()
    run_worker("q")
    assert time.monotonic() - started < 4.0
    assert events_of(ledger, jid) == ["start"]
    job = qless.get_job(jid)
    assert job is not None and (job.state, job.queue_name) == ("waiting", "elsewhere")
    assert [kw["reason"] for kw in sent.of("job_lock_lost")] == ["lock_lost"]


def test_refused_heartbeat_stops_the_job(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Ledger, redis_client: redis.Redis, sent: SignalLog,
) -> None:
    qless.config.put("q-heartbeat", 1)
    jid = put("worker.sleep", 5)

    def steal_silently() -> None:
        # Hand the job to someone else without any event: only the heartbeat can tell.
        wait_for(lambda: events_of(ledger, jid) == ["start"])
        redis_client.hset(f"ql:j:{jid}", "worker", "someone-else")

    in_thread(steal_silently)
    started = time.monotonic()
    run_worker("q")
    assert time.monotonic() - started < 4.0
    assert events_of(ledger, jid) == ["start"]
    job = qless.get_job(jid)
    assert job is not None and job.state == "running" and job.worker == "someone-else"
    reason = sent.of("job_lock_lost")[0]["reason"]
    assert reason.startswith("heartbeat refused")


def test_heartbeats_keep_a_long_job_leased(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    other_client: Client,
) -> None:
    qless.config.put("q-heartbeat", 1)
    qless.config.put("grace-period", 0)
    jid = put("worker.sleep", 2.5)
    stolen: list[Any] = []

    def try_to_steal() -> None:
        wait_for(lambda: job_state(qless, jid) == "running")
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and job_state(qless, jid) != "complete":
            stolen.extend(other_client.queue("q").pop())
            time.sleep(0.1)

    thief = in_thread(try_to_steal)
    worker = run_worker("q")
    thief.join()
    assert stolen == []
    assert job_state(qless, jid) == "complete"
    assert worker.monitor.heartbeats >= 4
    job = qless.get_job(jid)
    assert job is not None and "timed-out" not in [h.what for h in job.history]


@pytest.fixture
def other_client(qless: Client) -> Client:
    """Another worker identity on the same Redis."""
    return Client(qless.redis, worker_name="thief")


def test_interruptions_work_outside_the_main_thread(
    qless: Client, put: Callable[..., str], ledger: Ledger,
) -> None:
    # A worker run in a thread of its own: no signals, but asynchronous exceptions,
    # which land between two Python bytecodes (so these jobs sleep in short steps).
    from django_qless.worker import WorkerOptions  # noqa: PLC0415

    limited = put("worker.swallow", 10)
    canceled = put("worker.swallow", 10)
    worker = Worker(WorkerOptions(queues=("q",), burst=True, time_limit=0.5))

    def cancel() -> None:
        wait_for(lambda: events_of(ledger, canceled) == ["start"], timeout=8)
        qless.cancel(canceled)

    in_thread(cancel)
    started = time.monotonic()
    thread = in_thread(worker.run)
    thread.join(10)
    assert not thread.is_alive()
    assert time.monotonic() - started < 6.0
    assert not worker.interrupter.signals
    job = qless.get_job(limited)
    assert job is not None and job.failure is not None
    assert job.failure.group == "q-TimeLimitExceeded"
    assert qless.get_job(canceled) is None
    assert events_of(ledger, limited) == ["start"]
    assert events_of(ledger, canceled) == ["start"]


def test_the_callers_alarm_timer_is_given_back(
    put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    import signal  # noqa: PLC0415

    def handler(signum: int, frame: object) -> None:
        """Stands in for the caller's SIGALRM handler (pytest-timeout's, say)."""

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 30)
    try:
        put("worker.slow_limited")  # the worker's own 0.3 s timer replaces the caller's
        run_worker("q")
        assert signal.getsignal(signal.SIGALRM) is handler
        assert 25 < signal.getitimer(signal.ITIMER_REAL)[0] <= 30
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
