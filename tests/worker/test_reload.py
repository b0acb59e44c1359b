"""`qless_worker --reload` in real processes: stops, a dead parent, a code change."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from django_qless.core import Client
from tests.support import wait_for
from tests.workerapp import qless_jobs

from .conftest import WorkerProcess, job_state
from .test_shutdown import alive, started

Ledger = Callable[[], list[dict[str, Any]]]
Spawn = Callable[..., WorkerProcess]


def reloaded_child(qless: Client, put: Callable[..., str], ledger: Ledger) -> int:
    """Put a job, wait until the reloaded worker ran it; the pid of the process that did."""
    jid = put("worker.mark")
    wait_for(lambda: job_state(qless, jid) == "complete", timeout=30)
    return int([entry for entry in ledger() if entry["jid"] == jid][0]["pid"])


@pytest.mark.parametrize("sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["default", "ignored"])
def test_sigint_to_the_parent_stops_the_reloaded_worker_gracefully(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger, sigint: Any,
) -> None:
    # Ignored: started from a shell that ignores SIGINT (a background job).
    worker = spawn("q", "--reload", sigint=sigint)
    child = reloaded_child(qless, put, ledger)
    assert child != worker.proc.pid
    worker.signal(signal.SIGINT)
    assert worker.wait(timeout=30) == 0, worker.output()
    assert "stopping (signal SIGUSR2)" in worker.output()
    assert not alive(child)


def test_the_reloaded_worker_stops_when_its_parent_dies(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    worker = spawn("q", "--reload")
    child = reloaded_child(qless, put, ledger)
    worker.signal(signal.SIGKILL)
    worker.wait()
    wait_for(lambda: not alive(child), timeout=30, what="the orphaned child to exit")


def test_second_signal_to_the_parent_kills_the_reloaded_worker_at_once(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jid = put("worker.sleep", 60)
    worker = spawn("q", "--reload", "--shutdown-timeout", "120")
    wait_for(lambda: started(ledger, jid), timeout=30)
    child = ledger()[0]["pid"]
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "waiting up to 120" in worker.output(), timeout=30)
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 1, worker.output()
    assert time.monotonic() - sent_at < 10.0
    assert "second signal (SIGTERM), killing the reloaded worker now" in worker.output()
    wait_for(lambda: not alive(child), timeout=10)
    assert job_state(qless, jid) == "running"  # left to its lease


@pytest.fixture
def touch_jobs_module() -> Iterator[Callable[[], None]]:
    """Give the test jobs' module a newer mtime (its content unchanged); restored after."""
    path = Path(qless_jobs.__file__)
    before = path.stat()

    def touch() -> None:
        os.utime(path, (before.st_atime, time.time()))

    yield touch
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_code_change_restarts_the_worker_in_a_new_child(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
    touch_jobs_module: Callable[[], None],
) -> None:
    worker = spawn("q", "--reload")
    first = reloaded_child(qless, put, ledger)
    # Touched again until the reloader, which compares modification times from its first
    # look on, notices.
    deadline = time.monotonic() + 30
    while "qless_jobs.py changed; stopping to reload" not in worker.output():
        assert time.monotonic() < deadline, worker.output()
        touch_jobs_module()
        time.sleep(0.5)
    wait_for(lambda: not alive(first), timeout=30)
    second = reloaded_child(qless, put, ledger)
    assert second not in (first, worker.proc.pid)
    assert "code changed; restarting the worker" in worker.output()
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, worker.output()
