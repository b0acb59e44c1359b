"""The job page's attempts, built from hand-written histories, and the job kind and result."""

from __future__ import annotations

from typing import Any

import pytest

from django_qless.admin.attempts import (
    HANDED_BACK,
    Attempt,
    AttemptError,
    Outcome,
    build_attempts,
)
from django_qless.admin.job_info import TASK_KEY, has_result, job_kind, pretty_result
from django_qless.admin.presenters import timeline, when
from django_qless.core import Failure, HistoryEntry
from django_qless.results import ERROR_EVENT, RESULT_KEY
from tests.admin.conftest import KLASS

TRACEBACK = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: boom\n"


def entry(when: int, what: str, **extra: Any) -> HistoryEntry:
    """One history entry."""
    return HistoryEntry(when=when, what=what, extra=extra)


def task_error(when: int, path: str = "builtins.ValueError", tb: str = TRACEBACK) -> HistoryEntry:
    """The entry `record_error` writes."""
    return entry(when, ERROR_EVENT, exception_class_path=path, traceback=tb)


def summary(attempts: list[Attempt]) -> list[tuple[Any, ...]]:
    """(worker, outcome, duration) of each attempt."""
    return [(a.worker, a.outcome, a.duration) for a in attempts]


def test_the_worker_and_tasks_write_the_names_read_here() -> None:
    report = pytest.importorskip("django_qless.worker.report")
    assert report.HANDED_BACK == HANDED_BACK
    payload = pytest.importorskip("django_qless.tasks.payload")
    assert (payload.TASK_KEY, payload.RESULT_KEY) == (TASK_KEY, RESULT_KEY)


def test_retry_then_success() -> None:
    history = [
        entry(100, "put", q="jobs"), entry(101, "popped", worker="w1"), task_error(104),
        entry(110, "popped", worker="w2"), entry(112, "done"),
    ]
    attempts = build_attempts(history, "complete")
    assert summary(attempts) == [("w1", Outcome.RETRIED, 3.0), ("w2", Outcome.COMPLETED, 2.0)]
    assert [a.number for a in attempts] == [1, 2]
    assert attempts[0].error == AttemptError(None, "builtins.ValueError", TRACEBACK)
    assert attempts[1].error is None


def test_three_failures_the_last_one_final() -> None:
    history = [entry(100, "put", q="jobs")]
    for start, worker in ((101, "w1"), (110, "w2"), (120, "w1")):
        history += [entry(start, "popped", worker=worker), task_error(start + 1)]
    history.append(entry(121, "failed", worker="w1", group="jobs-ValueError"))
    failure = Failure("jobs-ValueError", TRACEBACK, 121, "w1")
    attempts = build_attempts(history, "failed", failure)
    assert [a.outcome for a in attempts] == [Outcome.RETRIED, Outcome.RETRIED, Outcome.FAILED]
    assert [a.duration for a in attempts] == [1.0, 1.0, 1.0]
    last = attempts[-1].error
    assert last == AttemptError("jobs-ValueError", "builtins.ValueError", TRACEBACK)


def test_a_retry_waiting_shows_its_error_in_the_attempt() -> None:
    # The worker recorded nothing (another client): the job's failure names the error.
    history = [entry(100, "put", q="jobs"), entry(101, "popped", worker="w1")]
    failure = Failure("jobs-KeyError", "Traceback\nKeyError: 'x'", 103, "w1")
    [attempt] = build_attempts(history, "waiting", failure)
    assert attempt.outcome is Outcome.RETRIED and attempt.ended is None
    assert attempt.error == AttemptError("jobs-KeyError", "", failure.message)
    assert attempt.error.summary == "KeyError: 'x'"


def test_lost_lease_then_retries_exhausted() -> None:
    history = [
        entry(100, "put", q="jobs"), entry(101, "popped", worker="w1"), entry(161, "timed-out"),
        entry(200, "popped", worker="w2"), entry(260, "timed-out"),
        entry(300, "failed", group="failed-retries-jobs"),
    ]
    message = "Job exhausted retries in queue \"jobs\""
    attempts = build_attempts(history, "failed", Failure("failed-retries-jobs", message, 300, ""))
    # How long a worker ran the job before its lease ran out is not known: no duration.
    assert summary(attempts) == [("w1", Outcome.TIMED_OUT, None),
                                 ("w2", Outcome.LEASE_EXPIRED, None)]
    assert [(a.lease_ended, a.exhausted) for a in attempts] == [
        (when(161), None), (when(260), when(300))]
    assert attempts[0].error is None
    assert attempts[1].error == AttemptError("failed-retries-jobs", "", message)
    assert attempts[1].error.summary == message


def test_a_failure_by_the_worker_after_a_lease_notice_is_its_own() -> None:
    # The worker was alive after all: it failed the job itself within the grace period.
    history = [entry(101, "popped", worker="w1"), entry(161, "timed-out"), task_error(165),
               entry(165, "failed", worker="w1", group="jobs-ValueError")]
    [attempt] = build_attempts(history, "failed")
    assert (attempt.outcome, attempt.duration, attempt.exhausted) == (Outcome.FAILED, 64.0, None)


def test_a_lease_notice_then_a_completion_in_the_grace_period() -> None:
    history = [entry(101, "popped", worker="w1"), entry(161, "timed-out"), entry(170, "done")]
    assert summary(build_attempts(history, "complete")) == [("w1", Outcome.COMPLETED, 69.0)]


def test_handed_back_then_run_again() -> None:
    history = [
        entry(100, "put", q="jobs"), entry(101, "popped", worker="w1"),
        entry(105, HANDED_BACK, worker="w1", reason="worker shutdown"),
        entry(105, "put", q="jobs"), entry(106, "popped", worker="w2"),
    ]
    attempts = build_attempts(history, "running")
    assert summary(attempts) == [("w1", Outcome.HANDED_BACK, 4.0), ("w2", Outcome.RUNNING, None)]


def test_moved_while_running_and_popped_again_unreported() -> None:
    history = [
        entry(101, "popped", worker="w1"), entry(103, "put", q="other"),
        entry(104, "popped", worker="w2"), entry(110, "popped", worker="w3"),
    ]
    attempts = build_attempts(history, "waiting")
    assert summary(attempts) == [
        ("w1", Outcome.REQUEUED, 2.0), ("w2", Outcome.UNREPORTED, None),
        ("w3", Outcome.UNREPORTED, None),
    ]


def test_a_job_of_another_client_with_no_popped_entries() -> None:
    history = [entry(100, "put", q="jobs"), entry(150, "done")]
    [attempt] = build_attempts(history, "complete")
    assert (attempt.worker, attempt.started, attempt.outcome) == (None, None, Outcome.COMPLETED)
    assert attempt.duration is None and attempt.ended is not None
    assert build_attempts([entry(100, "put", q="jobs")], "waiting") == []
    [running] = build_attempts([entry(100, "put", q="jobs")], "running", worker="ruby-1")
    assert (running.worker, running.outcome) == ("ruby-1", Outcome.RUNNING)


def test_a_failure_of_another_client_without_a_recorded_error() -> None:
    history = [entry(101, "popped", worker="w1"), entry(102, "failed", worker="w1", group="g")]
    failure = Failure("g", "RuntimeError: no", 102, "w1")
    [attempt] = build_attempts(history, "failed", failure)
    assert attempt.error == AttemptError("g", "", "RuntimeError: no")


def test_a_recorded_error_without_a_class_path_reads_it_from_the_traceback() -> None:
    history = [entry(101, "popped", worker="w1"), entry(102, ERROR_EVENT, traceback=TRACEBACK)]
    [attempt] = build_attempts(history, "waiting")
    assert attempt.error == AttemptError(None, "builtins.ValueError", TRACEBACK)
    assert attempt.error.summary == "ValueError: boom"


def test_kind_and_result() -> None:
    task: dict[str, Any] = {
        "args": [], "kwargs": {}, TASK_KEY: {"backend": "default"}, RESULT_KEY: None,
    }
    assert job_kind("app.tasks.add", task).label == "Django task (backend 'default')"
    assert job_kind(KLASS, {"args": [], "kwargs": {}}).api == "qless_job"
    assert job_kind("some.Ruby.Job", None).api == "other"
    assert pretty_result(task) == "null"
    assert pretty_result({"result": {"token": "s3cret", "n": 1}}) == (
        '{\n  "token": "********",\n  "n": 1\n}'
    )
    assert pretty_result({"args": [], "kwargs": {}}) is None and has_result(task)
    assert pretty_result(None) is None


def test_the_timeline_shows_a_recorded_traceback_by_its_telling_line() -> None:
    [shown] = timeline([task_error(104)])
    assert dict(shown.details) == {
        "exception_class_path": "builtins.ValueError", "traceback": "ValueError: boom",
    }
