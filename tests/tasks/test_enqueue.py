"""`enqueue` is one qless put: queue, priority, delay, klass, data; bad input writes nothing."""

from __future__ import annotations

import asyncio
import math
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from django_qless.core import Client, JobDataError, PayloadTooLargeError
from django_qless.tasks import QlessBackend, TaskArgumentsError
from django_qless.tasks.compat import InvalidTask, TaskResultStatus, task_backends, task_enqueued
from tests.support import nested


def test_enqueue_puts_one_job_with_the_task_s_queue_priority_klass_and_data(
    tasks: Any, qless: Client
) -> None:
    result = tasks.shout.enqueue("hi", times=2)
    job = qless.get_job(result.id)
    assert job is not None
    assert (job.queue_name, job.state, job.priority) == ("other", "waiting", 5)
    assert job.klass == "tests.tasks.taskapp.tasks.shout"
    assert job.data == {
        "args": ["hi"], "kwargs": {"times": 2},
        "task": {"backend": "default", "takes_context": False},
    }
    assert len(result.id) == 32 and result.id == job.jid


def test_the_returned_result_is_ready_and_stamped_like_the_put(tasks: Any, qless: Client) -> None:
    result = tasks.add.enqueue(1, 2)
    assert result.status == TaskResultStatus.READY
    assert (result.args, result.kwargs, result.backend) == ([1, 2], {}, "default")
    assert (result.errors, result.worker_ids, result.started_at) == ([], [], None)
    job = qless.get_job(result.id)
    assert job is not None and result.enqueued_at is not None
    assert result.enqueued_at.timestamp() == job.history[0].when
    assert timezone.is_aware(result.enqueued_at)


def test_tuples_become_lists_as_django_normalises_them(tasks: Any, qless: Client) -> None:
    result = tasks.add.enqueue((1, 2), {"k": (3,)})
    job = qless.get_job(result.id)
    assert job is not None and job.data["args"] == [[1, 2], {"k": [3]}]


def test_run_after_becomes_a_delay_and_a_past_one_none(tasks: Any, qless: Client) -> None:
    later = tasks.add.using(run_after=timezone.now() + timedelta(minutes=10)).enqueue(1, 1)
    past = tasks.add.using(run_after=timezone.now() - timedelta(minutes=10)).enqueue(1, 1)
    scheduled = qless.queue("default").jobs("scheduled")
    assert later.id in scheduled and past.id not in scheduled
    job = qless.get_job(past.id)
    assert job is not None and job.state == "waiting"
    later_job = qless.get_job(later.id)
    assert later_job is not None and later_job.data["task"]["run_after"]


def test_higher_priority_pops_first(tasks: Any, qless: Client) -> None:
    low = tasks.add.using(priority=-100).enqueue(0, 0)
    mid = tasks.add.enqueue(0, 0)
    high = tasks.add.using(priority=100).enqueue(0, 0)
    popped = [job.jid for job in qless.queue("default").pop(3)]
    assert popped == [high.id, mid.id, low.id]


def test_options_give_tags_and_retries(tasks: Any, qless: Client) -> None:
    result = tasks.tagged.enqueue(1)
    job = qless.get_job(result.id)
    assert job is not None
    assert (job.tags, job.retries) == (("tasks", "tagged"), 2)
    assert job.data["task"]["backend"] == "tagged"


def test_task_enqueued_is_sent_with_the_result(tasks: Any, qless: Client) -> None:
    seen: list[tuple[Any, Any]] = []

    def receiver(sender: Any, task_result: Any, **kwargs: Any) -> None:
        seen.append((sender, task_result))

    task_enqueued.connect(receiver)
    try:
        result = tasks.add.enqueue(1, 2)
    finally:
        task_enqueued.disconnect(receiver)
    assert seen == [(QlessBackend, result)]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param((object(),), id="object"),
        pytest.param(({1, 2},), id="set"),
        pytest.param((math.nan,), id="nan"),
        pytest.param(({1: "int key"},), id="int-key"),
        pytest.param((b"\xff",), id="non-utf8-bytes"),
    ],
)
def test_arguments_that_are_not_json_write_nothing(tasks: Any, args: Any, keyspace: Any) -> None:
    before = keyspace()
    with pytest.raises(TypeError) as info:
        tasks.add.enqueue(*args)
    assert isinstance(info.value, InvalidTask) and isinstance(info.value, TaskArgumentsError)
    assert keyspace() == before


@pytest.mark.parametrize("depth", [501, 1_000, 100_000])
@pytest.mark.parametrize("where", ["args", "kwargs"])
def test_arguments_nested_too_deeply_are_refused_as_qless_job_refuses_them(
    tasks: Any, keyspace: Any, depth: int, where: str
) -> None:
    before = keyspace()
    with pytest.raises(TaskArgumentsError, match="nested too deeply") as info:
        if where == "args":
            tasks.add.enqueue(nested(depth), 1)
        else:
            tasks.shout.enqueue("x", times=nested(depth))
    assert isinstance(info.value, InvalidTask) and isinstance(info.value.__cause__, JobDataError)
    assert keyspace() == before


def test_payload_over_the_limit_writes_nothing(
    tasks: Any, settings: Any, qless_settings: dict[str, Any], keyspace: Any
) -> None:
    settings.QLESS = {**qless_settings, "MAX_PAYLOAD_BYTES": 200}
    with pytest.raises(PayloadTooLargeError, match="limit"):
        tasks.add.enqueue("x" * 500, 1)
    assert keyspace() == {}


@pytest.mark.parametrize("priority", [101, -101])
def test_priority_out_of_range_is_django_s_invalid_task(
    tasks: Any, priority: int, keyspace: Any
) -> None:
    with pytest.raises(InvalidTask, match="priority"):
        tasks.add.using(priority=priority).enqueue(1, 2)
    assert keyspace() == {}


def test_unknown_queue_is_refused_before_anything_is_written(tasks: Any, keyspace: Any) -> None:
    with pytest.raises(InvalidTask, match="nope"):
        tasks.add.using(queue_name="nope").enqueue(1, 2)
    assert keyspace() == {}


def test_aenqueue_works_inside_an_event_loop(tasks: Any, qless: Client) -> None:
    async def main() -> Any:
        return await tasks.add.aenqueue(2, 3)

    result = asyncio.run(main())
    job = qless.get_job(result.id)
    assert job is not None and job.data["args"] == [2, 3]


def test_backend_is_built_from_tasks_settings() -> None:
    backend = task_backends["default"]
    assert isinstance(backend, QlessBackend)
    assert backend.supports_defer and backend.supports_async_task
    assert backend.supports_get_result and backend.supports_priority


def test_a_failing_task_enqueued_receiver_does_not_fail_the_enqueue(
    tasks: Any, qless: Client
) -> None:
    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    task_enqueued.connect(broken)
    try:
        result = tasks.add.enqueue(1, 2)
    finally:
        task_enqueued.disconnect(broken)
    assert qless.get_job(result.id) is not None
