"""`--isolation process`: results, failures, retries and signals work as in-process."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management.base import CommandError

from django_qless.core import Client
from django_qless.exceptions import QlessConfigurationError
from django_qless.results import ERROR_EVENT, RESULT_KEY
from django_qless.worker import Worker, WorkerOptions
from django_qless.worker.isolation import HARD_MARGIN, hard_limit
from django_qless.worker.report import HANDED_BACK
from django_qless.worker.supervisor import exit_description
from tests.support import wait_for

from .conftest import SignalLog, WorkerProcess, job_state

Ledger = Callable[[], list[dict[str, Any]]]
ISOLATED = {"isolation": "process"}


def test_returned_value_is_kept_and_the_job_ran_in_a_child(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker], sent: SignalLog,
) -> None:
    jid = put("worker.process_facts")
    run_worker("q", **ISOLATED)
    job = qless.get_job(jid)
    assert job is not None and job.state == "complete"
    facts = job.data[RESULT_KEY]
    assert facts["pid"] != os.getpid() and facts["ppid"] == os.getpid()
    assert facts["faulthandler"] is True
    assert sent.names().count("job_started") == 1 and "job_completed" in sent.names()


def test_exception_fails_into_its_class_group_with_the_childs_traceback(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker], sent: SignalLog,
) -> None:
    jid = put("worker.fail", "it broke")
    run_worker("q", **ISOLATED)
    job = qless.get_job(jid)
    assert job is not None and job.failure is not None
    assert job.failure.group == "q-ValueError"
    assert job.failure.message.startswith("Traceback (most recent call last):")
    assert job.failure.message.rstrip().endswith("ValueError: it broke")
    assert 'qless_jobs.py", line' in job.failure.message
    errors = [entry for entry in job.history if entry.what == ERROR_EVENT]
    assert len(errors) == 1
    failed = sent.of("job_failed")[0]
    assert failed["group"] == "q-ValueError"
    assert type(failed["exception"]).__name__ == "ValueError"


def test_retry_policy_and_retry_requests_cross_the_process_boundary(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker], ledger: Ledger,
) -> None:
    flaky = put("worker.flaky", retries=3)
    wants = put("worker.wants_retry", 100, retries=3)
    run_worker("q", **ISOLATED)
    flaky_job, wants_job = qless.get_job(flaky), qless.get_job(wants)
    assert flaky_job is not None and flaky_job.state == "scheduled"
    assert flaky_job.remaining == 2
    assert wants_job is not None and wants_job.state == "scheduled"
    assert wants_job.remaining == 2


def test_sys_exit_fails_the_job_and_the_worker_goes_on(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
) -> None:
    exits, after = put("worker.exits"), put("worker.noop")
    worker = run_worker("q", **ISOLATED)
    job = qless.get_job(exits)
    assert job is not None and job.failure is not None
    assert job.failure.group == "q-SystemExit"
    assert worker.outcomes["completed"] == 1
    assert job_state(qless, after) in (None, "complete")


def test_soft_time_limit_raises_inside_the_childs_job(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker], ledger: Ledger,
) -> None:
    jid = put("worker.slow_limited")
    run_worker("q", **ISOLATED)
    job = qless.get_job(jid)
    assert job is not None and job.failure is not None
    assert job.failure.group == "q-TimeLimitExceeded"
    assert "Traceback" in job.failure.message and "time.sleep(10)" in job.failure.message


def test_hard_limit_defaults_to_the_soft_limit_plus_a_margin() -> None:
    assert hard_limit(None, None) is None
    assert hard_limit(2.0, None) == 2.0 + HARD_MARGIN
    assert hard_limit(100.0, None) == 110.0
    assert hard_limit(None, 5.0) == 5.0
    assert hard_limit(0.3, 5.0) == 5.0
    assert hard_limit(10.0, 10.5) == 11.0


@pytest.mark.parametrize("options", [{"hard_time_limit": 5.0}, {"job_memory_mb": 100}])
def test_limits_only_isolation_enforces_are_refused_without_it(options: dict[str, Any]) -> None:
    with pytest.raises(QlessConfigurationError, match="ISOLATION 'process'"):
        Worker(WorkerOptions(queues=("q",), **options))


def test_hard_limit_below_the_soft_limit_is_refused() -> None:
    with pytest.raises(QlessConfigurationError, match="below TIME_LIMIT"):
        Worker(WorkerOptions(queues=("q",), isolation="process", time_limit=10,
                             hard_time_limit=5))


def test_command_refuses_an_unknown_isolation(run_worker: Callable[..., Worker]) -> None:
    with pytest.raises(CommandError, match="invalid choice"):
        run_worker("q", "--isolation", "thread")


def test_supervisor_describes_a_childs_death() -> None:
    assert exit_description(-9) == "was killed by signal SIGKILL"
    assert exit_description(3) == "exited with status 3"


def _start(ledger: Ledger, jid: str) -> dict[str, Any]:
    """The job's `start` entry, once it is there."""
    found = [e for e in ledger() if e["jid"] == jid and e["event"] == "start"]
    return found[0] if found else {}


def test_sigterm_lets_an_isolated_job_finish(
    qless: Client, put: Callable[..., str], spawn: Callable[..., WorkerProcess], ledger: Ledger,
) -> None:
    jid = put("worker.sleep", 1.0)
    worker = spawn("q", "--isolation", "process")
    child = wait_for(lambda: _start(ledger, jid), timeout=10)["pid"]
    # Both processes, as systemd's KillMode=control-group does: the job's process ignores it.
    os.kill(child, signal.SIGTERM)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert job_state(qless, jid) == "complete"


def test_shutdown_timeout_kills_the_isolated_job_and_hands_it_back(
    qless: Client, put: Callable[..., str], spawn: Callable[..., WorkerProcess], ledger: Ledger,
) -> None:
    jid = put("worker.sleep", 60, retries=3)
    worker = spawn("q", "--isolation", "process", "--shutdown-timeout", "1")
    child = wait_for(lambda: _start(ledger, jid), timeout=10)["pid"]
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert time.monotonic() - sent_at < 5.0
    job = qless.get_job(jid)
    assert job is not None and job.state == "waiting"
    assert [h.what for h in job.history] == ["put", "popped", HANDED_BACK, "put"]
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
