"""IMMEDIATE mode: jobs run inline through the worker's execute path, nothing goes to Redis."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from django_qless.core import JobDataError
from django_qless.definitions import ImmediateJob
from tests.testapp import qless_jobs
from tests.testapp.qless_jobs import add, echo, explode, send_welcome


@pytest.fixture(autouse=True)
def immediate(settings: Any) -> None:
    """IMMEDIATE on, and a URL nobody listens on: any Redis use would fail the test."""
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0", "IMMEDIATE": True}


def test_enqueue_runs_inline_and_returns_the_jid(keyspace: Any) -> None:
    jid = send_welcome.enqueue(5, template="hi")
    assert len(jid) == 32
    assert qless_jobs.CALLS == [("send_welcome", (5, "hi"))]
    assert keyspace() == {}


def test_arguments_are_json_round_tripped() -> None:
    echo.enqueue((1, (2, 3)))
    assert qless_jobs.CALLS[0][1][1] == [1, [2, 3]]


def test_takes_job_receives_a_job_like_object() -> None:
    jid = echo.using(jid="chosen-jid", tags=["t"], priority=4, retries=2).enqueue("v")
    assert jid == "chosen-jid"
    assert qless_jobs.CALLS == [("echo", ("chosen-jid", "v"))]
    [job] = qless_jobs.SEEN_JOBS
    assert isinstance(job, ImmediateJob)
    assert (job.jid, job.klass, job.queue_name) == ("chosen-jid", "testapp.echo", "default")
    assert (job.priority, job.tags, job.retries, job.remaining) == (4, ("t",), 2, 2)
    assert job.data == {"args": ["v"], "kwargs": {}}
    job.log("progress", {"step": 1})
    assert job.logs == [("progress", {"step": 1})]
    assert job.heartbeat() == float("inf")


def test_non_json_arguments_are_still_refused() -> None:
    with pytest.raises(JobDataError):
        echo.enqueue({1, 2})
    assert qless_jobs.CALLS == []


def test_job_exceptions_reach_the_caller() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        explode.enqueue("boom")


def test_immediate_jobs_run_on_commit(transactional_db: Any) -> None:
    with transaction.atomic():
        add.enqueue(1, 2)
        assert qless_jobs.CALLS == []
    assert qless_jobs.CALLS == [("add", (1, 2))]


def test_immediate_jobs_do_not_run_after_rollback(transactional_db: Any) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        add.enqueue(1, 2)
        raise ZeroDivisionError
    assert qless_jobs.CALLS == []


def test_call_runs_without_settings_immediate(settings: Any) -> None:
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0"}
    assert add.call(2, 3) == 5
    assert echo.call((1, 2)) == [1, 2]
    assert qless_jobs.CALLS[-1][0] == "echo"


@pytest.mark.django_db
def test_capturing_on_commit_callbacks_runs_jobs_in_wrapped_tests(
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        add.enqueue(4, 5)
        assert qless_jobs.CALLS == []
    assert qless_jobs.CALLS == [("add", (4, 5))]
