"""`async def` jobs run by the event loop itself at `--concurrency N` (`loop_jobs`).

Real workers on the suite's redis-server: subprocesses (no receiver of the job signals
but the library's) and in-process ones (where a test connects receivers).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest
from django.db import connections

from django_qless import signals
from django_qless.core import Client
from django_qless.worker import Worker
from django_qless.worker.databases import ConnectionHygiene
from django_qless.worker.lent_thread import LentThread, Loan
from django_qless.worker.pool import PoolWorker
from tests.support import wait_for

from .conftest import WorkerProcess
from .test_concurrency import Ledger, Put, all_state, events
from .test_db import file_db  # noqa: F401 - the fixture

Spawn = Callable[..., WorkerProcess]


def test_async_jobs_run_on_the_loop_with_no_slot_thread(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.anap", 1.0) for _ in range(8)]
    worker = spawn("q", "--concurrency", "8", "--burst")
    assert worker.wait(30) == 0, worker.output()
    assert all_state(qless, jids, "complete"), worker.output()
    starts = events(ledger, "start")
    assert {entry["thread"] for entry in starts.values()} == {f"qless-loop-{worker_name(starts)}"}
    ends = events(ledger, "end")
    assert max(s["t"] for s in starts.values()) < min(e["t"] for e in ends.values())


def worker_name(entries: dict[str, dict[str, Any]]) -> str:
    """The one worker name of the ledger entries."""
    (name,) = {entry["worker"] for entry in entries.values()}
    return str(name)


def test_a_jobs_sync_calls_run_in_order_on_one_lent_slot_thread(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.athreads", 3) for _ in range(6)]
    worker = spawn("q", "--concurrency", "3", "--burst")
    assert worker.wait(30) == 0, worker.output()
    assert all_state(qless, jids, "complete"), worker.output()
    recorded = events(ledger, "threads")
    assert set(recorded) == set(jids)
    for entry in recorded.values():
        # Thread-sensitive: every call of one job on the same thread, a slot's (of at
        # most 3), while the job itself ran on the loop.
        assert len(set(entry["names"])) == 1
        assert entry["names"][0].startswith("qless-slot-")
        assert entry["thread"].startswith("qless-loop-")
    assert len({entry["names"][0] for entry in recorded.values()}) <= 3


def test_with_a_receiver_of_the_job_signals_async_jobs_keep_their_slot_thread(
    file_db: str,  # noqa: F811 - the fixture
    qless: Client, put: Put, run_worker: Callable[..., Worker], ledger: Ledger,
) -> None:
    """A receiver may use the ORM, which Django refuses on the loop's thread: the job then
    starts and ends on a slot thread, as a plain function does."""
    seen: list[tuple[str, str]] = []

    def uses_the_orm(sender: Any, **kwargs: Any) -> None:
        with connections[file_db].cursor() as cursor:
            cursor.execute("SELECT 1")
        seen.append((kwargs["jid"], threading.current_thread().name))

    signals.job_started.connect(uses_the_orm, weak=False)
    try:
        jids = [put("worker.anap", 0.2) for _ in range(4)]
        worker = run_worker("q", concurrency=4)
    finally:
        signals.job_started.disconnect(uses_the_orm)
    assert isinstance(worker, PoolWorker)
    assert all_state(qless, jids, "complete")
    assert sorted(jid for jid, _ in seen) == sorted(jids)
    assert all(name.startswith("qless-slot-") for _, name in seen)
    # The coroutine itself still ran on the loop, awaited for its slot thread.
    assert {entry["thread"] for entry in events(ledger, "start").values()} \
        == {f"qless-loop-{worker.name}"}
    connections[file_db].close()


def test_a_time_limit_or_sigterm_stops_a_loop_job_and_the_others_go_on(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    limited = put("worker.anap_limited", 30)
    long = put("worker.anap", 60, retries=3)
    short = [put("worker.anap", 1.5) for _ in range(3)]
    worker = spawn("q", "--concurrency", "5", "--shutdown-timeout", "1")
    wait_for(lambda: limited in events(ledger, "stopped"), timeout=15)
    failed = qless.get_job(limited)
    assert failed is not None and failed.failure is not None
    assert failed.failure.group == "q-TimeLimitExceeded"
    wait_for(lambda: all_state(qless, short, "complete"), timeout=15)
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0, worker.output()
    assert 1.0 <= time.monotonic() - sent_at < 8.0
    job = qless.get_job(long)
    assert job is not None and job.state == "waiting" and job.remaining == 3
    assert "handed-back" in [entry.what for entry in job.history]
    assert events(ledger, "stopped")[long]["how"] == "CancelledError"


def test_loop_jobs_ending_together_share_their_completions(
    qless: Client, put: Put, run_worker: Callable[..., Worker],
) -> None:
    jids = [put("worker.anap", 0.05) for _ in range(300)]
    worker = run_worker("q", concurrency=50)
    assert isinstance(worker, PoolWorker)
    assert all_state(qless, jids, "complete")
    assert worker.outcomes["completed"] == 300
    assert 0 < worker.completions.round_trips < 300
    # The slots of jobs completed together are freed together and refilled by one pop.
    assert 0 < worker.pop_round_trips < 300


def test_a_loop_job_cancelled_from_inside_fails_and_frees_its_slot(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    """Only the worker's interruption turns a cancellation into a stop; any other is the
    job's failure, reported like an exception, and its slot runs the next job."""
    cancelled = [put("worker.acancels_itself") for _ in range(3)]
    after = put("worker.anap", 0.1)
    worker = spawn("q", "--concurrency", "2", "--burst")
    assert worker.wait(30) == 0, worker.output()
    for jid in cancelled:
        job = qless.get_job(jid)
        assert job is not None and job.state == "failed", worker.output()
        assert job.failure is not None and job.failure.group == "q-RuntimeError"
        assert "the job's coroutine was cancelled" in job.failure.message
    assert all_state(qless, [after], "complete"), worker.output()
    assert set(events(ledger, "start")) == {*cancelled, after}


def test_a_lent_thread_runs_the_calls_in_order_then_checks_its_connections() -> None:
    loans: list[Loan] = []
    thread = LentThread(loans.append)
    assert thread.close() is None and loans == []  # no call: no thread was lent
    thread = LentThread(loans.append)
    order: list[int] = []
    futures = [thread.submit(order.append, number) for number in range(3)]
    failing = thread.submit(lambda: 1 / 0)
    (loan,) = loans  # lent once, at the first call
    returned = thread.close()
    with pytest.raises(RuntimeError, match="has ended"):
        thread.submit(order.append, 9)
    checks: list[str] = []

    class Hygiene(ConnectionHygiene):
        def before_job(self) -> None:
            checks.append("before")

        def after_job(self) -> None:
            checks.append("after")

    served = threading.Thread(target=loan.serve, args=(Hygiene(),))
    served.start()
    served.join(5)
    assert order == [0, 1, 2] and [future.result() for future in futures] == [None] * 3
    assert isinstance(failing.exception(), ZeroDivisionError)
    assert checks == ["before", "after"]
    assert isinstance(returned, Future) and returned.done()
