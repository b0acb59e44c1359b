"""The supervisor's decisions, with real forks of the test process (children only exit)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from django_qless.worker import supervisor
from django_qless.worker.shutdown import FORCED_EXIT, STOP_SIGNALS
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
        # graceful stop (SIGUSR2, default action: exit).
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        signal.pause()
        return 0

    status = Supervisor(2, run_child).run()
    assert status == STARTUP_FAILED
    assert len(runs.read_text()) == 2  # nobody was restarted



def signal_when_ready(ready: Path, children: int, *signums: int) -> threading.Thread:
    """Once `children` children have written to `ready`, send `signums` to this process."""

    def send() -> None:
        deadline = time.monotonic() + 10
        while (not ready.exists() or len(ready.read_text()) < children) and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        for signum in signums:
            os.kill(os.getpid(), signum)
            time.sleep(0.2)  # more than a supervisor TICK: each signal is seen on its own

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def noting_child(ready: Path, received: Path, linger: float) -> Callable[[int], int]:
    """A child that writes each stop signal it gets to `received`, then lingers and exits 0."""

    def run_child(slot: int) -> int:
        stopped = threading.Event()

        def note(signum: int, frame: object) -> None:
            with received.open("a") as handle:
                handle.write(f"{slot}:{signal.Signals(signum).name}\n")
            stopped.set()

        for signum in STOP_SIGNALS:
            signal.signal(signum, note)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        counter(ready)
        while not stopped.wait(0.01):
            pass
        deadline = time.monotonic() + linger  # a signal sent later is noted too
        while time.monotonic() < deadline:
            time.sleep(0.01)
        return 0

    return run_child


def test_a_stop_reaches_each_child_once_as_the_uncounted_sigusr2(tmp_path: Path) -> None:
    ready, received = tmp_path / "ready", tmp_path / "received"
    signal_when_ready(ready, 2, signal.SIGTERM)
    started = time.monotonic()
    assert Supervisor(2, noting_child(ready, received, linger=0.5)).run() == 0
    assert sorted(received.read_text().split()) == ["0:SIGUSR2", "1:SIGUSR2"]
    assert time.monotonic() - started < 5


def test_sigusr2_to_the_supervisor_is_graceful_and_not_counted(tmp_path: Path) -> None:
    ready, received = tmp_path / "ready", tmp_path / "received"
    # SIGUSR2 then one SIGTERM: still a single counted signal, so the children finish.
    signal_when_ready(ready, 2, signal.SIGUSR2, signal.SIGTERM)
    assert Supervisor(2, noting_child(ready, received, linger=0.6)).run() == 0
    assert sorted(received.read_text().split()) == ["0:SIGUSR2", "1:SIGUSR2"]


def test_a_second_signal_kills_every_child_at_once(tmp_path: Path) -> None:
    ready, received = tmp_path / "ready", tmp_path / "received"
    pids: list[int] = []
    supervisor_ = Supervisor(2, noting_child(ready, received, linger=60))
    signal_when_ready(ready, 2, signal.SIGTERM, signal.SIGINT)
    started = time.monotonic()
    original = supervisor_._spawn

    def spawn_and_note(slot: int) -> None:
        original(slot)
        pids.extend(pid for pid in supervisor_.children if pid not in pids)

    supervisor_._spawn = spawn_and_note  # type: ignore[method-assign]
    assert supervisor_.run() == FORCED_EXIT
    assert time.monotonic() - started < 5  # not the children's 60 s
    assert supervisor_.children == {}
    for pid in pids:  # reaped: gone from the process table
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert sorted(received.read_text().split()) == ["0:SIGUSR2", "1:SIGUSR2"]
