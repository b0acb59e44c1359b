"""A stop sent to the supervisor and its workers at once (systemd's default KillMode, pkill).

Each worker then gets its own SIGTERM plus the supervisor's SIGUSR2, which it never counts
as a second signal: jobs finish (or are handed back after --shutdown-timeout) and the
exit status is 0. A second signal to the supervisor still stops everything at once.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import Client
from django_qless.worker.shutdown import SignalHandlers
from django_qless.worker.state import StopState
from tests.support import wait_for

from .conftest import WorkerProcess, job_state
from .test_shutdown import alive

Ledger = Callable[[], list[dict[str, Any]]]
Spawn = Callable[..., WorkerProcess]


def job_pids(ledger: Ledger, jids: list[str]) -> list[int]:
    """pids of the processes that started these jobs, once every one has started."""
    pids = {entry["jid"]: entry["pid"] for entry in ledger() if entry["event"] == "start"}
    return [pids[jid] for jid in jids] if all(jid in pids for jid in jids) else []


def kill_group(supervisor: WorkerProcess, children: list[int], signum: int) -> float:
    """Signal the supervisor and its children back to back, as a process-tree kill does."""
    sent_at = time.monotonic()
    for pid in [supervisor.proc.pid, *children]:
        os.kill(pid, signum)
    return sent_at


def test_sigterm_to_every_process_lets_the_jobs_finish(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.sleep", 1.5) for _ in range(2)]
    worker = spawn("q", "--processes", "2", "--shutdown-timeout", "30")
    children = wait_for(lambda: job_pids(ledger, jids), timeout=15)
    assert len(set(children)) == 2
    kill_group(worker, children, signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert [job_state(qless, jid) for jid in jids] == ["complete", "complete"]
    assert "second signal" not in worker.output()


def test_sigterm_to_every_process_hands_long_jobs_back_after_the_timeout(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.sleep_first", 30, retries=2) for _ in range(2)]
    worker = spawn("q", "--processes", "2", "--shutdown-timeout", "1")
    children = wait_for(lambda: job_pids(ledger, jids), timeout=15)
    sent_at = kill_group(worker, children, signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert 1.0 <= time.monotonic() - sent_at < 10.0
    for jid in jids:
        job = qless.get_job(jid)
        assert job is not None and (job.state, job.remaining) == ("waiting", 2)
    assert "second signal" not in worker.output()


def test_a_second_sigterm_to_the_supervisor_stops_everything_at_once(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.sleep", 30) for _ in range(2)]
    worker = spawn("q", "--processes", "2", "--shutdown-timeout", "60")
    children = wait_for(lambda: job_pids(ledger, jids), timeout=15)
    kill_group(worker, children, signal.SIGTERM)
    time.sleep(0.3)
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait() == 1, worker.output()
    assert time.monotonic() - sent_at < 3.0
    wait_for(lambda: not any(alive(pid) for pid in children), timeout=2)
    assert "second signal (SIGTERM), killing 2 worker process(es)" in worker.output()
    # Nobody finished or handed back the jobs: they come back through lease expiry.
    assert [job_state(qless, jid) for jid in jids] == ["running", "running"]


def test_a_second_signal_to_every_process_stops_everything_at_once(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.sleep", 30) for _ in range(2)]
    worker = spawn("q", "--processes", "2", "--shutdown-timeout", "60")
    children = wait_for(lambda: job_pids(ledger, jids), timeout=15)
    kill_group(worker, children, signal.SIGTERM)
    time.sleep(0.3)
    sent_at = kill_group(worker, children, signal.SIGINT)
    assert worker.wait() == 1, worker.output()
    assert time.monotonic() - sent_at < 3.0
    wait_for(lambda: not any(alive(pid) for pid in children), timeout=2)


@pytest.fixture
def handlers() -> Any:
    """The worker's signal handlers, installed in this (main) thread, restored after."""
    installed = SignalHandlers(StopState(), "test-worker")
    assert installed.install()
    yield installed
    installed.restore()


def deliver(signum: int) -> None:
    """Send a signal to this process and let its handler run."""
    os.kill(os.getpid(), signum)
    time.sleep(0.01)


def test_sigusr2_stops_the_worker_gracefully_without_counting(handlers: SignalHandlers
                                                              ) -> None:
    deliver(signal.SIGUSR2)
    assert handlers.stop.requested and handlers.stop.reason == "signal SIGUSR2"
    assert handlers.stop.signals == 0
    deliver(signal.SIGUSR2)
    deliver(signal.SIGTERM)  # one counted signal: still graceful, the process lives on
    assert handlers.stop.signals == 1
    assert handlers.stop.reason == "signal SIGUSR2"  # the first request wins
