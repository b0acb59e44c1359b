"""A stop signal that reaches `qless_worker` while it starts: a clean exit, nothing popped."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_qless.management import early_signals
from django_qless.worker import shutdown
from tests.support import wait_for

from .conftest import WorkerProcess

Spawn = Callable[..., WorkerProcess]
MODES = {"one process": (), "supervisor": ("--processes", "2"), "reload": ("--reload",)}


def importers(marker: Path) -> list[int]:
    """The pids that have started importing the (slow) test job module."""
    return [int(line) for line in marker.read_text().split()] if marker.exists() else []


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.5], ids=lambda d: f"{d * 1000:.0f}ms")
@pytest.mark.parametrize("mode", list(MODES))
def test_sigterm_while_the_job_modules_load_stops_it_before_it_starts(
    spawn: Spawn, tmp_path: Path, redis_client: redis.Redis, mode: str, delay: float,
) -> None:
    marker = tmp_path / "importing"
    worker = spawn("q", *MODES[mode], env={"QLESS_TEST_SLOW_IMPORT": str(marker)})
    # Django is loading the job modules (3 s): the worker has not installed its handlers.
    wait_for(lambda: importers(marker), timeout=60, what="the job module import")
    time.sleep(delay)
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0, worker.output()
    assert "stopped (signal SIGTERM) before starting" in worker.output()
    assert importers(marker) == [worker.proc.pid]  # nothing forked or started
    assert redis_client.zcard("ql:workers") == 0  # never registered


def test_reloaded_child_stopped_while_its_job_modules_load_exits_cleanly(
    spawn: Spawn, tmp_path: Path,
) -> None:
    marker = tmp_path / "importing"
    worker = spawn("q", "--reload", env={"QLESS_TEST_SLOW_IMPORT": str(marker),
                                         "QLESS_TEST_SLOW_IMPORT_SECONDS": "6"})
    # The parent loaded them (6 s), then started its child, which is loading them now.
    wait_for(lambda: len(importers(marker)) == 2, timeout=60, what="the child's import")
    worker.signal(signal.SIGTERM)  # passed on to the child as SIGUSR2
    assert worker.wait(timeout=60) == 0, worker.output()
    assert "stopped (signal SIGUSR2) before starting" in worker.output()


@pytest.mark.parametrize("delay", [0.0, 0.25, 0.5, 1.0, 1.5, 2.5])
def test_sigterm_at_any_moment_of_start_up_exits_cleanly(
    spawn: Spawn, tmp_path: Path, delay: float,
) -> None:
    # A short stall, so the signal lands at different moments: while the job modules
    # load, while the worker checks Redis, as it installs its handlers, or after.
    marker = tmp_path / "importing"
    worker = spawn("q", env={"QLESS_TEST_SLOW_IMPORT": str(marker),
                             "QLESS_TEST_SLOW_IMPORT_SECONDS": "0.3"})
    wait_for(lambda: importers(marker), timeout=60, what="the job module import")
    time.sleep(delay)
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0, worker.output()
    assert "Traceback" not in worker.output()


def test_a_second_signal_during_start_up_exits_at_once(
    spawn: Spawn, tmp_path: Path,
) -> None:
    marker = tmp_path / "importing"
    worker = spawn("q", env={"QLESS_TEST_SLOW_IMPORT": str(marker),
                             "QLESS_TEST_SLOW_IMPORT_SECONDS": "30"})
    wait_for(lambda: importers(marker), timeout=60, what="the job module import")
    worker.signal(signal.SIGTERM)
    worker.signal(signal.SIGINT)
    assert worker.wait(timeout=20) == 1, worker.output()
    assert "during start-up, exiting now" in worker.output()


def test_early_handlers_are_for_the_worker_command_only() -> None:
    assert early_signals.STOP_SIGNALS == shutdown.STOP_SIGNALS
    assert early_signals.FORCED_EXIT == shutdown.FORCED_EXIT
    handlers = early_signals.EarlySignals()
    assert not early_signals.install_for_worker_command(["manage.py", "runserver"])
    assert not early_signals.install_for_worker_command(["gunicorn", "app.wsgi"])
    assert early_signals.EARLY.installed is False
    received: list[int] = []
    handlers.hand_over(received.append)  # not installed: nothing to hand over
    assert received == []
