"""Fixtures for the worker tests: QLESS on the suite's redis-server, helpers to put and run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command

from django_qless import signals
from django_qless.connection import get_client, reset_clients
from django_qless.core import Client
from django_qless.worker import Worker
from tests.redis_harness import RedisServer
from tests.workerapp.qless_jobs import LEDGER

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def database_reachable(django_db_blocker: Any) -> Iterator[None]:
    """Let the worker close Django connections that earlier tests left open.

    The worker calls close_old_connections() around every job; with pytest-django's
    blocker on, that raises for any connection another test module opened.
    """
    with django_db_blocker.unblock():
        yield


@pytest.fixture(autouse=True)
def qless_settings(settings: Any, redis_client: redis.Redis, redis_server: RedisServer
                   ) -> Iterator[dict[str, Any]]:
    """QLESS on the suite's (flushed) server, a short fallback poll, fresh clients."""
    settings.QLESS = {"URL": redis_server.url, "WORKER": {"POLL_INTERVAL": 0.2}}
    yield settings.QLESS
    reset_clients()


@pytest.fixture
def qless(qless_settings: dict[str, Any]) -> Client:
    """The application's qless client (worker name `host-pid-random`)."""
    return get_client()


@pytest.fixture
def put(qless: Client) -> Callable[..., str]:
    """`put(klass, *args, queue="q", **options)`: enqueue a job in the worker tests' format."""

    def put_job(klass: str, *args: Any, queue: str = "q", kwargs: dict[str, Any] | None = None,
                **options: Any) -> str:
        return qless.queue(queue).put(klass, {"args": list(args), "kwargs": kwargs or {}},
                                      **options)

    return put_job


@pytest.fixture
def ledger(redis_client: redis.Redis) -> Callable[[], list[dict[str, Any]]]:
    """What the test jobs recorded, in order."""
    return lambda: [json.loads(item) for item in redis_client.lrange(LEDGER, 0, -1)]


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    """Every Worker started during the test (caught through `worker_started`)."""
    started: list[Worker] = []

    def keep(sender: Worker, **kwargs: Any) -> None:
        started.append(sender)

    signals.worker_started.connect(keep, dispatch_uid="tests.worker.keep")
    yield started
    signals.worker_started.disconnect(dispatch_uid="tests.worker.keep")


@pytest.fixture
def run_worker(workers: list[Worker]) -> Callable[..., Worker]:
    """Run `qless_worker` in this process (burst by default); returns the Worker it ran."""

    def run(*queues: str, **options: Any) -> Worker:
        options.setdefault("burst", True)
        options.setdefault("verbosity", 0)
        call_command("qless_worker", *(queues or ("q",)), **options)
        return workers[-1]

    return run


def job_state(client: Client, jid: str) -> str | None:
    """The job's state, or None once it is gone."""
    job = client.get_job(jid)
    return None if job is None else job.state


def in_thread(target: Callable[[], Any]) -> threading.Thread:
    """Run `target` in a daemon thread (for actions taken while the worker runs)."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


class WorkerProcess:
    """`python -m django qless_worker ...` in a subprocess, its stderr in a file."""

    def __init__(self, url: str, args: list[str], log: Path, *, sigint: Any = signal.SIG_DFL,
                 env: dict[str, str] | None = None) -> None:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.workerapp.settings",
            "QLESS_TEST_URL": url,
            "PYTHONPATH": str(ROOT),
            **(env or {}),
        }
        self.log = log
        self._stderr = log.open("wb")
        # SIGINT as `sigint` says, whatever this process inherited (restore_signals leaves
        # it alone, and a test run started as a background job has it ignored).
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "django", "qless_worker", *args],
            cwd=ROOT, env=env, stdout=self._stderr, stderr=subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),  # noqa: PLW1509
        )

    def signal(self, signum: int) -> float:
        """Send a signal; returns when (monotonic)."""
        self.proc.send_signal(signum)
        return time.monotonic()

    def wait(self, timeout: float = 15.0) -> int:
        """Wait for the exit status."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            output = self.output()
            raise AssertionError(f"worker did not exit within {timeout}s:\n{output}") from None

    def kill(self) -> None:
        """SIGKILL (cleanup)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(5)

    def output(self) -> str:
        """What the worker logged."""
        self._stderr.flush()
        return self.log.read_text(errors="replace")

    def close(self) -> None:
        """Kill if still running, close the log file."""
        self.kill()
        self._stderr.close()


@pytest.fixture
def spawn(redis_server: RedisServer, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start worker subprocesses on the suite's redis-server; killed after the test."""
    started: list[WorkerProcess] = []

    def start(*args: str, url: str | None = None, sigint: Any = signal.SIG_DFL,
              env: dict[str, str] | None = None) -> WorkerProcess:
        log = tmp_path / f"w{len(started)}.log"
        process = WorkerProcess(url or redis_server.url, list(args), log, sigint=sigint,
                                env=env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


class SignalLog:
    """Records the worker's Django signals as (name, kwargs) pairs."""

    NAMES = ("job_started", "job_completed", "job_failed", "job_retried", "job_lock_lost",
             "worker_started", "worker_stopped")

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._receivers: list[Callable[..., None]] = []

    def connect(self) -> None:
        for name in self.NAMES:
            def receiver(sender: Any, _name: str = name, **kwargs: Any) -> None:
                kwargs.pop("signal", None)
                self.events.append((_name, {"sender": sender, **kwargs}))

            self._receivers.append(receiver)
            getattr(signals, name).connect(receiver, weak=False)

    def disconnect(self) -> None:
        for name, receiver in zip(self.NAMES, self._receivers, strict=True):
            getattr(signals, name).disconnect(receiver)

    def names(self) -> list[str]:
        """Signal names in the order they were sent."""
        return [name for name, _ in self.events]

    def of(self, name: str) -> list[dict[str, Any]]:
        """The kwargs of every `name` signal."""
        return [kwargs for sent, kwargs in self.events if sent == name]


@pytest.fixture
def sent() -> Iterator[SignalLog]:
    """The worker signals sent during the test."""
    log = SignalLog()
    log.connect()
    yield log
    log.disconnect()
