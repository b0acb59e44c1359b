"""Every worker log line about a job carries its jid, klass, queue and attempt."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import Client
from django_qless.worker import Worker
from django_qless.worker.log_fields import JOB_FIELDS


def test_each_line_about_a_job_names_it_and_its_attempt(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    caplog: pytest.LogCaptureFixture,
) -> None:
    klasses = {
        put("worker.noop"): "worker.noop",
        put("worker.fail"): "worker.fail",
        put("worker.wants_retry", 0, retries=1): "worker.wants_retry",
    }
    gone = put("worker.cancel", "x" * 32)
    qless.queue("q").put("worker.cancel", {"args": [gone], "kwargs": {}}, jid=gone)
    klasses[gone] = "worker.cancel"
    with caplog.at_level(logging.DEBUG, logger="django_qless"):
        run_worker("q")
    about: dict[str, list[logging.LogRecord]] = {jid: [] for jid in klasses}
    for record in caplog.records:
        for jid in klasses:
            if record.name.startswith("django_qless") and jid in record.getMessage():
                about[jid].append(record)
    for jid, records in about.items():
        assert records, f"no line about {klasses[jid]}"
        for record in records:
            fields = {name: getattr(record, name, "missing") for name in JOB_FIELDS}
            assert fields["jid"] == jid, record.getMessage()
            assert (fields["klass"], fields["queue"]) == (klasses[jid], "q"), fields
            assert isinstance(fields["attempt"], int) and fields["attempt"] >= 1, fields
    retried = [(r.levelname, r.attempt) for r in about[next(
        jid for jid, klass in klasses.items() if klass == "worker.wants_retry")]
        if r.levelno >= logging.WARNING]  # type: ignore[attr-defined]
    assert retried == [("WARNING", 1), ("ERROR", 2)]
    # The worker's own line, not a signal's: the job that lost its lock.
    lost = [r for r in about[gone] if r.name == "django_qless.worker"]
    assert lost and "result discarded" in lost[0].getMessage()


def test_the_job_signals_of_a_worker_carry_the_attempt(
    put: Callable[..., str], run_worker: Callable[..., Worker], sent: Any,
) -> None:
    put("worker.wants_retry", 0, retries=1)
    run_worker("q")
    attempts = [(name, kwargs["attempt"]) for name, kwargs in sent.events
                if name.startswith("job_")]
    assert attempts == [("job_started", 1), ("job_retried", 1), ("job_started", 2),
                        ("job_failed", 2)]
