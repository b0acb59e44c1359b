"""@qless_job return values, errors across retries and async jobs, run by a real worker."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from django_qless import signals
from django_qless.core import Client, RetryJob
from django_qless.decorators import qless_job
from django_qless.results import JobStatus, ResultDoesNotExist
from django_qless.worker import Worker, WorkerOptions
from django_qless.worker.aio import JobLoop
from django_qless.worker.interrupt import Interrupter, LockLost

#: Loops the async jobs below ran on, and attempts of `flaky_twice`, by jid.
LOOPS: list[asyncio.AbstractEventLoop] = []
ATTEMPTS: dict[str, int] = {}
CANCELLED: list[str] = []


@qless_job(name="results.kept", queue="q", store_result=True)
def kept(a: int, b: int) -> dict[str, Any]:
    """Returns a dict, kept in the completed job."""
    return {"sum": a + b, "pair": (a, b)}


@qless_job(name="results.dropped", queue="q")
def dropped() -> int:
    """Returns a value nobody asked to keep."""
    return 7


@qless_job(name="results.too_large", queue="q", store_result=True)
def too_large(size: int) -> str:
    """Returns a long text."""
    return "x" * size


@qless_job(name="results.not_json", queue="q", store_result=True)
def not_json() -> Any:
    """Returns a set."""
    return {1, 2}


@qless_job(name="results.flaky_twice", queue="q", store_result=True, takes_job=True)
def flaky_twice(job: Any) -> str:
    """Fails on its first two attempts (RetryJob with no delay), then succeeds."""
    ATTEMPTS[job.jid] = ATTEMPTS.get(job.jid, 0) + 1
    if ATTEMPTS[job.jid] <= 2:
        raise RetryJob(0, message=f"attempt {ATTEMPTS[job.jid]} failed")
    return "third time"


@qless_job(name="results.async_add", queue="q", store_result=True)
async def async_add(a: int, b: int) -> int:
    """An async job: awaits, then returns."""
    LOOPS.append(asyncio.get_running_loop())
    await asyncio.sleep(0)
    return a + b


@qless_job(name="results.async_sleeps", queue="q", time_limit=0.3, takes_job=True)
async def async_sleeps(job: Any) -> None:
    """Sleeps past its time limit; records its cancellation."""
    LOOPS.append(asyncio.get_running_loop())
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        CANCELLED.append(job.jid)
        raise


@pytest.fixture(autouse=True)
def _reset() -> None:
    LOOPS.clear()
    ATTEMPTS.clear()
    CANCELLED.clear()


Run = Callable[..., Worker]


def test_a_kept_value_reads_back_through_result(qless: Client, run_worker: Run) -> None:
    jid = kept.enqueue(2, 3)
    assert kept.result(jid).status is JobStatus.READY
    run_worker("q")
    result = kept.result(jid)
    assert result.status is JobStatus.SUCCESSFUL
    assert result.value == {"sum": 5, "pair": [2, 3]}
    assert result.errors == ()
    job = qless.get_job(jid)
    assert job is not None and job.data["args"] == [2, 3]  # the call is kept beside it


def test_the_status_is_running_while_the_job_runs(run_worker: Run) -> None:
    seen: list[JobStatus] = []

    def look(sender: Any, jid: str, **kwargs: Any) -> None:
        seen.append(kept.result(jid).status)

    signals.job_started.connect(look)
    try:
        jid = kept.enqueue(1, 1)
        run_worker("q")
    finally:
        signals.job_started.disconnect(look)
    assert seen == [JobStatus.RUNNING]
    assert kept.result(jid).status is JobStatus.SUCCESSFUL


def test_a_value_is_not_kept_unless_asked(run_worker: Run, settings: Any) -> None:
    jid = dropped.enqueue()
    run_worker("q")
    assert dropped.result(jid).status is JobStatus.SUCCESSFUL
    assert dropped.result(jid).value is None
    settings.QLESS = {**settings.QLESS, "STORE_RESULTS": True}
    jid = dropped.enqueue()
    run_worker("q")
    assert dropped.result(jid).value == 7


def test_the_plain_path_completes_with_its_data_unchanged(qless: Client, run_worker: Run) -> None:
    jid = dropped.enqueue()
    run_worker("q")
    job = qless.get_job(jid)
    assert job is not None and job.data == {"args": [], "kwargs": {}}


@pytest.mark.parametrize(
    ("job", "args", "needle"),
    [(too_large, (200,), "RESULT_MAX_BYTES"), (not_json, (), "not JSON")],
    ids=["too-large", "not-json"],
)
def test_a_value_that_cannot_be_kept_fails_the_job_clearly(
    qless: Client, run_worker: Run, settings: Any, job: Any, args: tuple[Any, ...], needle: str
) -> None:
    settings.QLESS = {**settings.QLESS, "RESULT_MAX_BYTES": 100}
    jid = job.enqueue(*args)
    run_worker("q")
    stored = qless.get_job(jid)
    assert stored is not None and stored.state == "failed"
    assert stored.failure is not None
    assert stored.failure.group == "q-ResultNotStorableError"
    assert needle in stored.failure.message
    result = job.result(jid)
    assert result.status is JobStatus.FAILED
    [error] = result.errors
    assert error.exception_class_path == "django_qless.results.ResultNotStorableError"


def test_errors_survive_retries_two_failures_then_success(run_worker: Run) -> None:
    jid = flaky_twice.enqueue()
    run_worker("q")
    result = flaky_twice.result(jid)
    assert result.status is JobStatus.SUCCESSFUL
    assert result.value == "third time"
    assert [error.traceback for error in result.errors] == [
        "attempt 1 failed", "attempt 2 failed",
    ]
    assert {e.exception_class_path for e in result.errors} == {
        "django_qless.core.exceptions.RetryJob"
    }


def test_an_async_job_runs_on_the_worker_s_one_loop(run_worker: Run) -> None:
    jids = [async_add.enqueue(n, 1) for n in range(3)]
    worker = run_worker("q")
    assert [async_add.result(jid).value for jid in jids] == [1, 2, 3]
    assert len(set(map(id, LOOPS))) == 1  # one loop, reused: never one per job
    assert worker.job_loop._loop is None  # closed at shutdown


def test_a_time_limit_cancels_an_async_job_and_the_loop_serves_the_next(
    qless: Client, run_worker: Run, workers: list[Worker]
) -> None:
    slow = async_sleeps.enqueue()
    after = async_add.enqueue(20, 22)
    modes: list[bool] = []

    def mode(sender: Any, **kwargs: Any) -> None:
        modes.append(workers[-1].interrupter.signals)

    signals.job_started.connect(mode)
    try:
        run_worker("q")
    finally:
        signals.job_started.disconnect(mode)
    assert modes == [True, True]  # the timer's SIGALRM cancelled the task
    job = qless.get_job(slow)
    assert job is not None and job.state == "failed"
    assert job.failure is not None and job.failure.group == "q-TimeLimitExceeded"
    assert CANCELLED == [slow]  # the coroutine saw its cancellation
    assert async_add.result(after).value == 42
    assert len(LOOPS) == 2 and LOOPS[0] is LOOPS[1]


def test_outside_the_main_thread_the_monitor_cancels_an_async_job(qless: Client) -> None:
    slow = async_sleeps.enqueue()
    after = async_add.enqueue(1, 1)
    worker = Worker(WorkerOptions(queues=("q",), burst=True))
    thread = threading.Thread(target=worker.run, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - started < 6.0
    assert not worker.interrupter.signals
    job = qless.get_job(slow)
    assert job is not None and job.failure is not None
    assert job.failure.group == "q-TimeLimitExceeded"
    assert CANCELLED == [slow]
    assert async_add.result(after).value == 2


def test_a_lost_lock_cancels_an_async_job(qless: Client, run_worker: Run) -> None:
    jid = async_sleeps.enqueue()
    after = async_add.enqueue(1, 2)

    def cancel_once_running(sender: Any, jid: str, **kwargs: Any) -> None:
        if jid == slow_jid:
            threading.Timer(0.1, lambda: qless.cancel(jid)).start()

    slow_jid = jid
    signals.job_started.connect(cancel_once_running)
    try:
        worker = run_worker("q", time_limit=None)
    finally:
        signals.job_started.disconnect(cancel_once_running)
    assert CANCELLED == [jid]
    assert worker.outcomes["lock lost"] == 1
    assert async_add.result(after).value == 3


def test_the_job_loop_cancels_on_interruption_directly() -> None:
    interrupter = Interrupter(use_signals=False)
    job_loop = JobLoop(interrupter)

    async def forever() -> None:
        await asyncio.sleep(30)

    interrupter.arm(None)
    threading.Timer(0.05, lambda: interrupter.interrupt(LockLost)).start()
    with pytest.raises(LockLost):
        job_loop.run(forever())
    interrupter.disarm()
    interrupter.arm(None)

    async def quick() -> int:
        return 5

    assert job_loop.run(quick()) == 5
    interrupter.disarm()
    job_loop.close()


def test_result_of_an_unknown_jid_or_another_job_s_raises(qless: Client, run_worker: Run) -> None:
    with pytest.raises(ResultDoesNotExist):
        kept.result("0" * 32)
    jid = dropped.enqueue()
    with pytest.raises(ResultDoesNotExist):
        kept.result(jid)
