"""Django Tasks tasks run by `qless_worker`, beside @qless_job jobs, read back with get_result."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from django_qless.core import Client
from django_qless.tasks import ResultNotStorableError
from django_qless.tasks.compat import TaskResultStatus, task_finished, task_started
from django_qless.worker.targets import runs_tasks
from tests.redis_harness import RedisServer
from tests.tasks.compat import DUMMY_BACKEND
from tests.worker.conftest import WorkerProcess
from tests.workerapp.qless_jobs import LEDGER

Run = Callable[..., None]


@pytest.fixture(autouse=True)
def database_reachable(django_db_blocker: Any) -> Iterator[None]:
    """The worker closes Django connections around jobs (see tests/worker/conftest.py)."""
    with django_db_blocker.unblock():
        yield


@pytest.fixture(autouse=True)
def calls(tasks: ModuleType) -> list[tuple[str, Any]]:
    """What the tasks recorded, cleared for each test."""
    tasks.CALLS.clear()
    return tasks.CALLS  # type: ignore[no-any-return]


@pytest.fixture
def run_worker(qless_settings: dict[str, Any]) -> Run:
    """`manage.py qless_worker <queues> --burst` in this process."""

    def run(*queues: str, **options: Any) -> None:
        call_command("qless_worker", *(queues or ("default", "other")), burst=True,
                     verbosity=0, **options)

    return run


@pytest.fixture
def signalled() -> Iterator[list[tuple[str, Any]]]:
    """(signal name, status) of every task_started / task_finished sent."""
    sent: list[tuple[str, Any]] = []

    def on_started(sender: Any, task_result: Any, **kwargs: Any) -> None:
        sent.append(("started", task_result.status))

    def on_finished(sender: Any, task_result: Any, **kwargs: Any) -> None:
        sent.append(("finished", task_result.status))

    task_started.connect(on_started)
    task_finished.connect(on_finished)
    yield sent
    task_started.disconnect(on_started)
    task_finished.disconnect(on_finished)


def test_every_state_through_get_result(tasks: ModuleType, run_worker: Run) -> None:
    seen: list[Any] = []

    def look(sender: Any, task_result: Any, **kwargs: Any) -> None:
        seen.append(tasks.add.get_result(task_result.id).status)

    enqueued = tasks.add.enqueue(2, 3)
    assert tasks.add.get_result(enqueued.id).status == TaskResultStatus.READY
    task_started.connect(look)
    try:
        run_worker()
    finally:
        task_started.disconnect(look)
    assert seen == [TaskResultStatus.RUNNING]
    result = tasks.add.get_result(enqueued.id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5
    assert len(result.worker_ids) == 1 and result.errors == []
    assert result.started_at is not None and result.finished_at is not None


def test_signals_are_sent_with_the_statuses_django_sends(
    tasks: ModuleType, run_worker: Run, signalled: list[tuple[str, Any]]
) -> None:
    tasks.add.enqueue(1, 1)
    tasks.explode.enqueue("no")
    run_worker()
    assert signalled == [
        ("started", TaskResultStatus.RUNNING), ("finished", TaskResultStatus.SUCCESSFUL),
        ("started", TaskResultStatus.RUNNING), ("finished", TaskResultStatus.FAILED),
    ]


def test_a_failure_is_failed_with_its_error(tasks: ModuleType, run_worker: Run) -> None:
    enqueued = tasks.explode.enqueue("gone")
    run_worker()
    result = tasks.explode.get_result(enqueued.id)
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class is LookupError
    assert "gone" in error.traceback


def test_errors_across_retries_two_failures_then_success(
    tasks: ModuleType, run_worker: Run
) -> None:
    enqueued = tasks.flaky_twice.enqueue()
    run_worker()
    result = tasks.flaky_twice.get_result(enqueued.id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 3
    assert [error.traceback for error in result.errors] == ["attempt 1 failed",
                                                            "attempt 2 failed"]
    assert len(result.worker_ids) == 3


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [("tagged", ("x" * 200,), "RESULT_MAX_BYTES"), ("returns_a_set", (), "not JSON")],
    ids=["too-large", "not-json"],
)
def test_a_return_value_that_cannot_be_stored_fails_the_job(
    tasks: ModuleType, run_worker: Run, qless: Client, name: str, args: tuple[Any, ...],
    needle: str,
) -> None:
    task = getattr(tasks, name)
    enqueued = task.enqueue(*args)
    run_worker()
    job = qless.get_job(enqueued.id)
    assert job is not None and job.failure is not None
    assert job.failure.group == "default-ResultNotStorableError"
    result = task.get_result(enqueued.id)
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class is ResultNotStorableError
    assert needle in error.traceback


def test_a_time_limit_cancels_an_async_task_and_the_loop_serves_the_next(
    tasks: ModuleType, run_worker: Run, calls: list[tuple[str, Any]]
) -> None:
    slow = tasks.async_sleeps.enqueue("slow")
    quick = tasks.async_quick.enqueue(41)
    started = time.monotonic()
    run_worker("default")
    assert time.monotonic() - started < 10
    result = tasks.async_sleeps.get_result(slow.id)
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class_path.endswith("TimeLimitExceeded")
    assert ("cancelled", "slow") in calls
    assert tasks.async_quick.get_result(quick.id).return_value == 42
    loops = [value for name, value in calls if name == "loop"]
    assert len(loops) == 2 and loops[0] is loops[1]


def test_higher_priority_runs_first(tasks: ModuleType, run_worker: Run,
                                    calls: list[tuple[str, Any]]) -> None:
    tasks.record.using(priority=-10).enqueue("low")
    tasks.record.enqueue("middle")
    tasks.record.using(priority=50).enqueue("high")
    run_worker("default")
    assert [label for name, label in calls if name == "record"] == ["high", "middle", "low"]


def test_run_after_waits_in_the_queue(tasks: ModuleType, run_worker: Run,
                                      calls: list[tuple[str, Any]]) -> None:
    later = tasks.record.using(run_after=timezone.now() + timedelta(seconds=1.5))
    enqueued = later.enqueue("later")
    run_worker("default")
    assert calls == []
    assert later.get_result(enqueued.id).status == TaskResultStatus.READY
    time.sleep(2.1)
    run_worker("default")
    assert later.get_result(enqueued.id).status == TaskResultStatus.SUCCESSFUL


def test_qless_jobs_and_tasks_share_a_queue(
    tasks: ModuleType, run_worker: Run, qless: Client, redis_client: Any
) -> None:
    jid = qless.queue("default").put("worker.mark", {"args": ["job"], "kwargs": {}})
    enqueued = tasks.add.enqueue(4, 4)
    run_worker("default")
    job = qless.get_job(jid)
    assert job is not None and job.state == "complete"
    assert redis_client.llen(LEDGER) == 1
    assert tasks.add.get_result(enqueued.id).return_value == 8


def test_a_task_path_outside_installed_apps_is_never_imported(
    qless: Client, run_worker: Run
) -> None:
    sys.modules.pop("tests.tasks.outside", None)
    data = {"args": [], "kwargs": {}, "task": {"backend": "default", "takes_context": False}}
    jid = qless.queue("default").put("tests.tasks.outside.outside", data)
    run_worker("default")
    job = qless.get_job(jid)
    assert job is not None and job.failure is not None
    assert job.failure.group == "default-UnknownJobError"
    assert "tests.tasks.outside" not in sys.modules


@pytest.mark.parametrize(
    ("klass", "backend"),
    [
        ("tests.tasks.taskapp.tasks.on_dummy", "dummy"),
        ("tests.tasks.taskapp.tasks.on_dummy", "default"),
        ("tests.tasks.taskapp.tasks.add", "dummy"),
        ("tests.tasks.taskapp.tasks.add", "no-such-alias"),
    ],
    ids=["dummy-task", "dummy-task-forged-marker", "marker-of-another-backend", "no-alias"],
)
def test_a_task_of_another_backend_fails_unknown(
    tasks: ModuleType, qless: Client, run_worker: Run, klass: str, backend: str
) -> None:
    data = {"args": [1, 2], "kwargs": {}, "task": {"backend": backend}}
    jid = qless.queue("default").put(klass, data)
    run_worker("default")
    job = qless.get_job(jid)
    assert job is not None and job.failure is not None
    assert job.failure.group == "default-UnknownJobError"
    assert tasks.CALLS == []


def test_a_module_is_not_imported_for_data_without_the_marker(
    qless: Client, run_worker: Run
) -> None:
    sys.modules.pop("tests.tasks.taskapp.unimported", None)
    jid = qless.queue("default").put("tests.tasks.taskapp.unimported.f", {"args": []})
    run_worker("default")
    job = qless.get_job(jid)
    assert job is not None and job.state == "failed"
    assert "tests.tasks.taskapp.unimported" not in sys.modules



def test_with_the_qless_tasks_backend_the_worker_pops_whole_jobs(tasks: ModuleType) -> None:
    # A task's result is built from its job's history: lean pops would read it per job.
    assert runs_tasks()
    with override_settings(TASKS={"default": {"BACKEND": DUMMY_BACKEND}}):
        assert not runs_tasks()


def test_a_task_popped_by_a_worker_without_tasks_says_what_to_configure(
    tasks: ModuleType, qless: Client, redis_server: RedisServer, tmp_path: Path
) -> None:
    enqueued = tasks.add.enqueue(1, 2)
    # A worker process whose settings (tests.workerapp.settings) have no TASKS.
    worker = WorkerProcess(redis_server.url, ["default", "--burst"], tmp_path / "worker.log")
    try:
        assert worker.wait(timeout=60) == 0, worker.output()
    finally:
        worker.close()
    job = qless.get_job(enqueued.id)
    assert job is not None and job.failure is not None
    assert job.failure.group == "default-UnknownJobError"
    message = job.failure.message
    assert "Django task 'tests.tasks.taskapp.tasks.add' cannot run" in message
    assert "settings have no TASKS" in message and "alias 'default'" in message
    assert "'BACKEND': 'django_qless.tasks.QlessBackend'" in message
    assert "qless_jobs.py" not in message and tasks.CALLS == []


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        ({"other": {"BACKEND": "django_qless.tasks.QlessBackend"}},
         "TASKS has no alias 'default', the one the task was enqueued through (it has "
         "'other'); add 'default' with 'BACKEND': 'django_qless.tasks.QlessBackend'"),
        ({"default": {"BACKEND": DUMMY_BACKEND}},
         f"TASKS['default'] uses {DUMMY_BACKEND}, not django_qless.tasks.QlessBackend"),
    ],
    ids=["alias-missing", "another-backend"],
)
def test_a_task_whose_alias_the_worker_lacks_says_so(
    tasks: ModuleType, qless: Client, run_worker: Run, settings: Any,
    configured: dict[str, Any], expected: str,
) -> None:
    enqueued = tasks.add.enqueue(1, 2)
    settings.TASKS = configured
    run_worker("default")
    job = qless.get_job(enqueued.id)
    assert job is not None and job.failure is not None
    assert expected in job.failure.message
    assert "qless_jobs.py" not in job.failure.message and tasks.CALLS == []


def test_async_tasks_at_concurrency_run_on_one_loop_and_keep_their_time_limits(
    tasks: ModuleType, run_worker: Run, calls: list[tuple[str, Any]]
) -> None:
    slow = tasks.async_sleeps.enqueue("slow")
    quick = [tasks.async_quick.enqueue(value) for value in range(5)]
    doubled = tasks.async_double.enqueue(21)
    started = time.monotonic()
    run_worker("default", concurrency=3)
    assert time.monotonic() - started < 10
    result = tasks.async_sleeps.get_result(slow.id)
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class_path.endswith("TimeLimitExceeded")
    assert ("cancelled", "slow") in calls
    assert [tasks.async_quick.get_result(q.id).return_value for q in quick] == [1, 2, 3, 4, 5]
    assert tasks.async_double.get_result(doubled.id).return_value == 42
    loops = [value for name, value in calls if name == "loop"]
    assert len(loops) == 6 and all(loop is loops[0] for loop in loops)


def test_every_task_running_at_once_gets_its_task_finished(
    tasks: ModuleType, run_worker: Run, signalled: list[tuple[str, Any]]
) -> None:
    # 24 tasks running together, all over their 0.3 s time limit: each one's end is
    # awaited at once (more than a serial worker ever has in flight).
    for index in range(24):
        tasks.async_sleeps.enqueue(f"slow-{index}")
    run_worker("default", concurrency=24)
    finished = [status for name, status in signalled if name == "finished"]
    assert finished == [TaskResultStatus.FAILED] * 24
