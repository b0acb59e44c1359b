"""Failures: groups and messages, unknown klasses, bad payloads, retries with backoff."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from django_qless.core import Client, RetryJob
from django_qless.worker import Worker, WorkerOptions, runner
from django_qless.worker.failures import MAX_MESSAGE
from tests.support import FakeClock

from .conftest import SignalLog, job_state

Ledger = Callable[[], list[dict[str, Any]]]


def test_exception_fails_into_queue_and_class_group(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker], sent: SignalLog
) -> None:
    jid = put("worker.fail", "it broke")
    worker = run_worker("q")
    job = qless.get_job(jid)
    assert job is not None and job.state == "failed"
    assert job.failure is not None
    assert job.failure.group == "q-ValueError"
    assert job.failure.worker == worker.name
    assert job.failure.message.startswith("Traceback (most recent call last):")
    assert job.failure.message.rstrip().endswith("ValueError: it broke")
    assert 'qless_jobs.py", line' in job.failure.message
    failed = sent.of("job_failed")[0]
    assert failed["group"] == "q-ValueError" and isinstance(failed["exception"], ValueError)
    assert qless.failed() == {"q-ValueError": 1}


def test_long_traceback_is_truncated_keeping_its_end(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    jid = put("worker.huge_failure")
    run_worker("q")
    job = qless.get_job(jid)
    assert job is not None and job.failure is not None
    message = job.failure.message
    assert len(message) <= MAX_MESSAGE
    assert message.startswith("Traceback")
    assert "characters cut" in message
    assert message.rstrip().endswith("x" * 50)


def test_unknown_klass_fails_at_once_and_is_never_imported(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    sent: SignalLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = tmp_path / "imported"
    monkeypatch.setenv("QLESS_SENTINEL_FILE", str(marker))
    sys.modules.pop("tests.workerapp.sentinel", None)
    jid = put("tests.workerapp.sentinel.boom", retries=3)
    run_worker("q")
    job = qless.get_job(jid)
    assert job is not None and job.state == "failed"
    assert job.failure is not None and job.failure.group == "q-UnknownJobError"
    assert "tests.workerapp.sentinel.boom" in job.failure.message
    assert job.remaining == 3  # failed on its first attempt, no retry spent
    assert "tests.workerapp.sentinel" not in sys.modules
    assert not marker.exists()
    assert sent.of("job_failed")[0]["sender"] is None
    assert "job_started" not in sent.names()


def test_an_unknown_klass_enqueued_after_the_worker_started_says_the_worker_is_stale(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    messages = {}
    for label, started in (("stale", qless.now() - 60), ("older job", qless.now() + 3600)):
        monkeypatch.setattr(runner, "PROCESS_STARTED", started)
        jid = put("app.jobs.added_since_the_worker_started")
        run_worker("q")
        job = qless.get_job(jid)
        assert job is not None and job.failure is not None
        messages[label] = job.failure.message
    assert "before the job was enqueued" in messages["stale"]
    assert "qless_worker --reload" in messages["stale"]
    assert "before the job was enqueued" not in messages["older job"]
    assert "This worker has run since" in messages["older job"]


@pytest.mark.parametrize("klass", ["worker.mark", "worker.flaky"])
def test_bad_payload_fails_into_its_own_group_without_retry(
    klass: str, qless: Client, run_worker: Callable[..., Worker]
) -> None:
    # worker.flaky has a retry policy covering every Exception: a bad payload is still final.
    jid = qless.queue("q").put(klass, {"args": "not a list"}, retries=2)
    run_worker("q")
    job = qless.get_job(jid)
    assert job is not None and job.state == "failed" and job.failure is not None
    assert job.failure.group == "q-BadPayloadError"
    assert job.remaining == 2


@pytest.fixture
def clock() -> FakeClock:
    """A clock the retry tests move past each backoff delay."""
    return FakeClock()


@pytest.fixture
def clocked_worker(redis_client: redis.Redis, clock: FakeClock) -> Worker:
    """A worker (not started: run_once only) whose client runs on the fake clock."""
    client = Client(redis_client, clock=clock)
    return Worker(WorkerOptions(queues=("q",), handle_signals=False), client=client)


def test_retry_policy_backs_off_then_fails_into_the_exception_group(
    clocked_worker: Worker, clock: FakeClock, redis_client: redis.Redis, sent: SignalLog
) -> None:
    client = clocked_worker.client
    jid = client.queue("q").put("worker.flaky", {"args": [], "kwargs": {}}, retries=3)
    # backoff 10, factor 3, jitter 50% pinned to its top: 15, 45, 135 seconds.
    for expected in (15, 45, 135):
        assert clocked_worker.run_once()
        assert redis_client.zscore("ql:q:q-scheduled", jid) == pytest.approx(clock.now + expected)
        job = client.get_job(jid)
        assert job is not None and job.state == "scheduled"
        assert job.failure is not None and job.failure.group == "q-ValueError"
        assert not clocked_worker.run_once()  # nothing is due yet
        clock.advance(expected)
    assert clocked_worker.run_once()
    job = client.get_job(jid)
    assert job is not None and job.state == "failed"
    assert job.failure is not None and job.failure.group == "q-ValueError"
    assert job.failure.message.rstrip().endswith("ValueError: try again")
    assert [kw["delay"] for kw in sent.of("job_retried")] == [15, 45, 135]
    assert [kw["group"] for kw in sent.of("job_failed")] == ["q-ValueError"]
    assert clocked_worker.outcomes == {"retried": 3, "failed": 1}


def test_retry_job_exception_asks_for_a_delayed_retry(
    clocked_worker: Worker, clock: FakeClock, redis_client: redis.Redis
) -> None:
    client = clocked_worker.client
    jid = client.queue("q").put("worker.wants_retry", {"args": [30], "kwargs": {}}, retries=1)
    assert clocked_worker.run_once()
    assert redis_client.zscore("ql:q:q-scheduled", jid) == pytest.approx(clock.now + 30)
    job = client.get_job(jid)
    assert job is not None and job.remaining == 0
    clock.advance(30)
    assert clocked_worker.run_once()
    job = client.get_job(jid)
    assert job is not None and job.state == "failed"
    assert job.failure is not None and job.failure.group == "q-RetryJob"


def test_a_retry_is_one_warning_line_and_its_traceback_is_at_debug(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    caplog: pytest.LogCaptureFixture,
) -> None:
    jid = put("worker.wants_retry", 30, retries=2)
    with caplog.at_level(logging.DEBUG, logger="django_qless"):
        run_worker("q")
    assert job_state(qless, jid) == "scheduled"
    about = [record for record in caplog.records
             if record.name.startswith("django_qless") and jid in record.getMessage()]
    warnings = [record for record in about if record.levelno >= logging.WARNING]
    assert [record.getMessage() for record in warnings] == [
        f"qless job worker.wants_retry {jid} in q retried in 30 s "
        "(RetryJob: retry requested (delay=30)); 1 retry left"
    ]
    assert warnings[0].exc_info is None  # no traceback at WARNING
    [traced] = [record for record in about if record.exc_info is not None]
    assert traced.levelno == logging.DEBUG and isinstance(traced.exc_info[1], RetryJob)


def test_exceptions_outside_the_policy_fail_without_retry(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    jid = put("worker.fail")  # no retry policy
    run_worker("q")
    assert job_state(qless, jid) == "failed"
    job = qless.get_job(jid)
    assert job is not None and job.remaining == job.retries


def test_sys_exit_in_a_job_fails_the_job_not_the_worker(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    exits, after = put("worker.exits"), put("worker.noop")
    run_worker("q")
    job = qless.get_job(exits)
    assert job is not None and job.failure is not None
    assert job.failure.group == "q-SystemExit"
    assert job_state(qless, after) == "complete"


def test_an_exception_text_with_a_lone_surrogate_is_recorded_escaped(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    """Text with no UTF-8 form (a file name decoded with surrogateescape) in an exception."""
    jid = put("worker.fail_undecodable")
    run_worker("q")
    job = qless.get_job(jid)
    assert job is not None and job.state == "failed" and job.failure is not None
    assert job.failure.message.rstrip().endswith("ValueError: bad \\udcff")


def test_an_empty_klass_put_by_another_client_fails_as_unknown_saying_so(
    qless: Client, run_worker: Callable[..., Worker], sent: SignalLog
) -> None:
    # The script accepts klass "" (the Ruby gem's anonymous classes); Python never puts one.
    qless.call("put", "ruby", "q", "anon", "", '{"args": [], "kwargs": {}}', 0, "retries", 2)
    worker = run_worker("q")
    job = qless.get_job("anon")
    assert job is not None and job.state == "failed" and job.klass == ""
    assert job.failure is not None and job.failure.group == "q-UnknownJobError"
    assert job.failure.worker == worker.name
    assert "empty klass" in job.failure.message
    assert "older than the code" not in job.failure.message  # no stale-code advice
    assert job.remaining == 2  # failed on its first attempt, no retry spent
    assert sent.of("job_failed")[0]["group"] == "q-UnknownJobError"
    assert "job_started" not in sent.names()
