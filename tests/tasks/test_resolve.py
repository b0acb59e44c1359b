"""The worker's lookup refuses anything but a QlessBackend task in an installed app; run_task."""

from __future__ import annotations

import sys
import traceback
from typing import Any

import pytest

from django_qless.core import Client
from django_qless.tasks import (
    QlessBackend,
    ResultNotStorableError,
    TaskDataError,
    record_error,
    resolve_task,
    run_task,
    with_result,
)
from django_qless.tasks.compat import TaskResultStatus


def test_a_task_in_an_installed_app_resolves(tasks: Any) -> None:
    assert resolve_task("tests.tasks.taskapp.tasks.add") is tasks.add


@pytest.mark.parametrize(
    "klass",
    [
        pytest.param("tests.tasks.outside.outside", id="outside-installed-apps"),
        pytest.param("os.system", id="stdlib"),
        pytest.param("tests.tasks.taskapp.tasks.on_dummy", id="not-a-qless-backend"),
        pytest.param("tests.tasks.taskapp.tasks.not_a_task", id="plain-function"),
        pytest.param("tests.tasks.taskapp.tasks.missing", id="missing-name"),
        pytest.param("tests.tasks.taskapp.missing.add", id="missing-module"),
        pytest.param("tests.tasks.taskapp.tasks.CALLS", id="not-callable"),
        pytest.param("add", id="no-module"),
        pytest.param("", id="empty"),
        pytest.param("tests.tasks.taskapp.tasks.add.__call__", id="attribute-path"),
    ],
)
def test_anything_else_is_none(tasks: Any, klass: str) -> None:
    assert resolve_task(klass) is None


def test_a_module_outside_installed_apps_is_never_imported(tasks: Any) -> None:
    assert resolve_task("tests.tasks.outside.outside") is None
    assert "tests.tasks.outside" not in sys.modules


def test_run_task_calls_the_function_with_the_job_s_arguments(tasks: Any) -> None:
    data = {"args": ["hi"], "kwargs": {"times": 3}, "task": {"backend": "default"}}
    assert run_task(tasks.shout, data, 1, "worker-1") == "HIHIHI"


def test_run_task_gives_a_context_whose_attempt_counts_attempts(tasks: Any) -> None:
    data = {"args": ["x"], "kwargs": {}, "task": {"backend": "default", "takes_context": True}}
    value = run_task(tasks.attempt_number, data, 3, "worker-1", jid="j1")
    assert value == {"label": "x", "attempt": 3, "id": "j1"}


def test_run_task_runs_an_async_task_to_completion(tasks: Any) -> None:
    data = {"args": [21], "kwargs": {}, "task": {"backend": "default"}}
    assert run_task(tasks.async_double, data, 1, "worker-1") == 42


@pytest.mark.parametrize(
    "data",
    [{"args": [], "kwargs": {}}, {"args": {}, "kwargs": {}, "task": {}}, {"task": {}}],
)
def test_run_task_refuses_data_of_another_shape(tasks: Any, data: dict[str, Any]) -> None:
    with pytest.raises(TaskDataError):
        run_task(tasks.add, data, 1, "worker-1")


def run_as_the_worker_will(worker: Client, queue: str = "default") -> None:
    """Pop one job and run it through the helpers the worker calls."""
    [job] = worker.queue(queue).pop()
    task = resolve_task(job.klass)
    assert task is not None
    backend = task.get_backend()
    assert isinstance(backend, QlessBackend)
    attempt = sum(entry.what == "popped" for entry in job.history)
    try:
        value = run_task(task, job.data, attempt, worker.worker_name, jid=job.jid)
        data = with_result(job.data, value, backend.result_max_bytes)
    except Exception as exc:  # noqa: BLE001 - the worker fails the job with any error
        message = "".join(traceback.format_exception(exc))
        record_error(job, exc, message)
        job.fail(f"{queue}-{type(exc).__name__}", message)
    else:
        job.complete(data)


def test_the_helpers_compose_into_the_worker_s_run(tasks: Any, worker: Client) -> None:
    enqueued = tasks.attempt_number.enqueue("z")
    run_as_the_worker_will(worker)
    result = tasks.attempt_number.get_result(enqueued.id)
    assert result.return_value == {"label": "z", "attempt": 1, "id": enqueued.id}
    assert result.worker_ids == ["worker-1"]


def test_a_return_value_over_the_limit_fails_the_job_with_a_clear_error(
    tasks: Any, worker: Client
) -> None:
    enqueued = tasks.tagged.enqueue("x" * 200)  # RESULT_MAX_BYTES is 100 on "tagged"
    run_as_the_worker_will(worker)
    result = tasks.tagged.get_result(enqueued.id)
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class is ResultNotStorableError
    assert "RESULT_MAX_BYTES" in error.traceback
