"""`get_result` reads the job back: every state, timings, workers, errors across retries."""

from __future__ import annotations

import asyncio
import sys
import traceback
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from django_qless.core import Client, Job, commands
from django_qless.tasks import build_result, record_error, with_result
from django_qless.tasks.compat import (
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    task_backends,
)
from tests.support import FakeClock

READY, RUNNING = TaskResultStatus.READY, TaskResultStatus.RUNNING
SUCCESSFUL, FAILED = TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED


class BoomError(Exception):
    """What the failing attempts raise."""


def raised(exc: Exception) -> tuple[Exception, str]:
    """An exception with its traceback, and the traceback as the worker formats it."""
    try:
        raise exc
    except Exception as caught:  # noqa: BLE001 - the point is to catch it
        return caught, "".join(traceback.format_exception(caught))


def pop(worker: Client, clock: FakeClock, queue: str = "default") -> Job:
    """The worker pops the next job, 100 seconds after the last step."""
    clock.advance(100)
    [job] = worker.queue(queue).pop()
    return job


def fail_attempt(job: Job, *, retry: bool, record: bool = True) -> str:
    """Fail the running attempt as the worker does (record the error, then retry or fail)."""
    exc, message = raised(BoomError(f"attempt of {job.jid}"))
    if record:
        record_error(job, exc, message)
    group = f"{job.queue_name}-BoomError"
    if retry:
        job.retry(0, group, message)
    else:
        job.fail(group, message)
    return message


def test_a_new_job_is_ready(tasks: Any) -> None:
    enqueued = tasks.add.enqueue(1, 2)
    result = tasks.add.get_result(enqueued.id)
    assert result.status == READY and not result.is_finished
    assert (result.id, result.args, result.kwargs, result.backend) == (
        enqueued.id, [1, 2], {}, "default",
    )
    assert result.enqueued_at == enqueued.enqueued_at
    assert (result.started_at, result.finished_at, result.last_attempted_at) == (None,) * 3
    assert (result.errors, result.worker_ids) == ([], [])
    with pytest.raises(ValueError, match="not finished"):
        result.return_value  # noqa: B018 - the property raises


def test_the_result_s_task_is_the_one_enqueued(tasks: Any) -> None:
    run_after = timezone.now() + timedelta(hours=1)
    enqueued = tasks.shout.using(priority=-7, run_after=run_after).enqueue("a")
    result = tasks.shout.get_result(enqueued.id)
    assert result.status == READY  # scheduled
    assert result.task.func is tasks.shout.func
    assert (result.task.queue_name, result.task.priority) == ("other", -7)
    assert result.task.run_after == run_after


def test_running_then_successful_with_the_return_value(
    tasks: Any, worker: Client, worker_clock: FakeClock
) -> None:
    enqueued = tasks.add.enqueue(2, 3)
    job = pop(worker, worker_clock)
    result = tasks.add.get_result(enqueued.id)
    assert result.status == RUNNING
    assert result.worker_ids == ["worker-1"] and result.attempts == 1
    assert result.started_at == result.last_attempted_at
    assert result.started_at.timestamp() == worker_clock.now

    worker_clock.advance(50)
    job.complete(with_result(job.data, 5, 1000))
    result.refresh()
    assert result.status == SUCCESSFUL and result.is_finished
    assert result.return_value == 5
    assert result.finished_at.timestamp() == worker_clock.now
    assert result.enqueued_at < result.started_at < result.finished_at
    assert result.errors == []


def test_failed_with_its_error(tasks: Any, worker: Client, worker_clock: FakeClock) -> None:
    enqueued = tasks.add.enqueue(1, 1)
    message = fail_attempt(pop(worker, worker_clock), retry=False)
    result = tasks.add.get_result(enqueued.id)
    assert result.status == FAILED and result.is_finished
    assert result.finished_at.timestamp() == worker_clock.now
    [error] = result.errors
    assert error.exception_class_path == f"{__name__}.BoomError"
    assert error.exception_class is BoomError
    assert error.traceback == message
    with pytest.raises(ValueError, match="failed"):
        result.return_value  # noqa: B018 - the property raises


def test_errors_are_kept_across_retries(
    tasks: Any, worker: Client, worker_clock: FakeClock
) -> None:
    enqueued = tasks.add.enqueue(1, 1)
    first = fail_attempt(pop(worker, worker_clock), retry=True)
    result = tasks.add.get_result(enqueued.id)
    assert result.status == READY and result.finished_at is None
    assert [e.traceback for e in result.errors] == [first]
    assert result.worker_ids == ["worker-1"]

    second = fail_attempt(pop(worker, worker_clock), retry=True)
    job = pop(worker, worker_clock)
    result.refresh()
    assert result.status == RUNNING
    assert [e.traceback for e in result.errors] == [first, second]
    assert result.worker_ids == ["worker-1"] * 3 and result.attempts == 3
    assert result.started_at < result.last_attempted_at

    job.complete(with_result(job.data, "ok", 1000))
    result.refresh()
    assert (result.status, result.return_value, len(result.errors)) == (SUCCESSFUL, "ok", 2)


def test_a_failure_not_recorded_in_history_is_read_from_the_job(
    tasks: Any, worker: Client, worker_clock: FakeClock
) -> None:
    enqueued = tasks.add.enqueue(1, 1)
    message = fail_attempt(pop(worker, worker_clock), retry=False, record=False)
    [error] = tasks.add.get_result(enqueued.id).errors
    assert (error.exception_class_path, error.traceback) == (f"{__name__}.BoomError", message)


def test_a_retried_failure_then_unfailed_is_ready_with_its_error(
    tasks: Any, worker: Client, worker_clock: FakeClock
) -> None:
    enqueued = tasks.add.enqueue(1, 1)
    fail_attempt(pop(worker, worker_clock), retry=False)
    worker.unfail("default", "default-BoomError")
    result = tasks.add.get_result(enqueued.id)
    assert result.status == READY and len(result.errors) == 1 and result.finished_at is None


def test_a_job_waiting_on_another_is_ready(tasks: Any, worker: Client) -> None:
    other = tasks.add.enqueue(0, 0)
    enqueued = tasks.add.enqueue(1, 1)
    job = worker.get_job(enqueued.id)
    assert job is not None
    job.requeue(depends=[other.id])
    assert worker.get_job(enqueued.id).state == "depends"  # type: ignore[union-attr]
    assert tasks.add.get_result(enqueued.id).status == READY


@pytest.mark.parametrize(
    ("state", "status"),
    [
        ("waiting", READY), ("scheduled", READY), ("depends", READY), ("stalled", READY),
        ("running", RUNNING), ("complete", SUCCESSFUL), ("failed", FAILED),
    ],
)
def test_every_qless_state_maps_to_a_status(
    tasks: Any, qless: Client, state: str, status: TaskResultStatus
) -> None:
    enqueued = tasks.add.enqueue(1, 1)
    stored = qless.get_job(enqueued.id)
    assert stored is not None
    job = Job(qless, {"jid": stored.jid, "klass": stored.klass, "state": state,
                      "queue": "default", "data": stored.raw_data, "history": []})
    assert build_result(job, tasks.add, "default").status == status


def test_retries_exhausted_by_lost_leases_are_one_error(tasks: Any, qless: Client) -> None:
    enqueued = tasks.add.enqueue(1, 1)
    stored = qless.get_job(enqueued.id)
    assert stored is not None
    message = 'Job exhausted retries in queue "default"'
    job = Job(qless, {
        "jid": stored.jid, "klass": stored.klass, "state": "failed", "data": stored.raw_data,
        "failure": {"group": "failed-retries-default", "message": message, "when": 1,
                    "worker": ""},
    })
    [error] = build_result(job, tasks.add, "default").errors
    assert error.exception_class_path == "django_qless.core.exceptions.LockLostError"
    assert error.traceback == message


@pytest.mark.parametrize("result_id", ["0" * 32, "not a jid", ""])
def test_unknown_ids_do_not_exist(tasks: Any, result_id: str) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(result_id)


def test_a_qless_job_that_is_not_a_task_does_not_exist(tasks: Any, qless: Client) -> None:
    qless.put(commands.put(qless.worker_name, "default", "a" * 32, "tests.tasks.taskapp.tasks.add",
                           '{"args":[1,2],"kwargs":{}}'))
    with pytest.raises(TaskResultDoesNotExist, match="not a Django task"):
        tasks.add.get_result("a" * 32)


def test_a_task_path_outside_installed_apps_does_not_exist(tasks: Any, qless: Client) -> None:
    data = '{"args":[],"kwargs":{},"task":{"backend":"default","takes_context":false}}'
    qless.put(commands.put(qless.worker_name, "default", "b" * 32, "tests.tasks.outside.outside",
                           data))
    with pytest.raises(TaskResultDoesNotExist):
        task_backends["default"].get_result("b" * 32)
    assert "tests.tasks.outside" not in sys.modules


def test_another_backend_s_result_does_not_exist_here(tasks: Any) -> None:
    enqueued = tasks.tagged.enqueue(1)
    assert tasks.tagged.get_result(enqueued.id).backend == "tagged"
    with pytest.raises(TaskResultDoesNotExist, match="tagged"):
        task_backends["default"].get_result(enqueued.id)


def test_another_task_s_result_is_django_s_mismatch(tasks: Any) -> None:
    enqueued = tasks.shout.enqueue("a")
    with pytest.raises(TaskResultMismatch):
        tasks.add.get_result(enqueued.id)


def test_aget_result_works_inside_an_event_loop(tasks: Any) -> None:
    async def main() -> Any:
        enqueued = await tasks.add.aenqueue(1, 2)
        result = await tasks.add.aget_result(enqueued.id)
        await result.arefresh()
        return result

    assert asyncio.run(main()).args == [1, 2]


def test_a_completed_task_keeps_the_queue_it_ran_in(
    tasks: Any, worker: Client, worker_clock: FakeClock
) -> None:
    enqueued = tasks.add.using(queue_name="other", priority=9).enqueue(1, 2)
    job = pop(worker, worker_clock, "other")
    job.complete(with_result(job.data, 3, 1000))
    result = tasks.add.get_result(enqueued.id)
    assert (result.task.queue_name, result.task.priority, result.return_value) == ("other", 9, 3)


def test_a_task_enqueued_through_another_qless_backend_names_it(tasks: Any) -> None:
    enqueued = tasks.add.using(backend="open", queue_name="anywhere").enqueue(1, 2)
    result = task_backends["open"].get_result(enqueued.id)
    assert (result.backend, result.task.backend, result.task.queue_name) == (
        "open", "open", "anywhere",
    )
