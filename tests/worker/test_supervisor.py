"""The supervisor's decisions, with real forks of the test process (children only exit)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from django_qless.worker import supervisor
from django_qless.worker.shutdown import GRACEFUL
from django_qless.worker.supervisor import STARTUP_FAILED, Supervisor


@pytest.fixture(autouse=True)
def quick_restarts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace crashed children at once."""
    monkeypatch.setattr(supervisor, "RESTART_DELAY", 0.01)


def counter(path: Path) -> int:
    """Append to a file and return how many times it was appended to (one per child)."""
    with path.open("a") as handle:
        handle.write("x")
    return len(path.read_text())


def test_children_killed_mid_job_are_replaced(tmp_path: Path) -> None:
    runs = tmp_path / "runs"

    def run_child(slot: int) -> int:
        if counter(runs) <= 2:  # the first two die the way a job can kill its process
            os.kill(os.getpid(), signal.SIGKILL)
        return 0

    status = Supervisor(1, run_child, restart=False).run()
    assert len(runs.read_text()) == 3
    assert status == signal.SIGKILL  # the worst exit is reported


def test_a_worker_that_cannot_start_stops_every_child(tmp_path: Path) -> None:
    runs = tmp_path / "runs"

    def run_child(slot: int) -> int:
        counter(runs)
        if slot == 0:
            raise RuntimeError("cannot start")
        # As a worker does once its handlers are in place; then wait for the supervisor's
        # SIGTERM (default action: exit).
        signal.pthread_sigmask(signal.SIG_UNBLOCK, GRACEFUL)
        signal.pause()
        return 0

    status = Supervisor(2, run_child).run()
    assert status == STARTUP_FAILED
    assert len(runs.read_text()) == 2  # nobody was restarted
