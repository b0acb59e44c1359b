"""`enqueue_many(task, calls)`: a task's calls checked together, then put in few round trips."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction

from django_qless.core import Client, JobDataError
from django_qless.outbox.models import OutboxEntry
from django_qless.tasks import TaskArgumentsError, enqueue_many
from django_qless.tasks.compat import TaskResultStatus, task_enqueued
from tests.support import nested

pytestmark = pytest.mark.django_db(transaction=True)


class RollbackError(Exception):
    """Raised to roll a transaction back."""


@pytest.fixture
def sent() -> Iterator[list[Any]]:
    """The results of every `task_enqueued` sent during the test."""
    results: list[Any] = []

    def receiver(sender: Any, task_result: Any, **kwargs: Any) -> None:
        results.append(task_result)

    task_enqueued.connect(receiver)
    yield results
    task_enqueued.disconnect(receiver)


def test_results_come_back_in_order_with_their_jobs(
    tasks: Any, qless: Client, sent: list[Any]
) -> None:
    results = enqueue_many(tasks.shout, [(("a",), {"times": 2}), (["b"], {})])
    assert [r.args for r in results] == [["a"], ["b"]]
    assert all(r.status == TaskResultStatus.READY and r.enqueued_at for r in results)
    jobs = qless.get_jobs([r.id for r in results])
    assert [(job.queue_name, job.priority, job.data["args"]) for job in jobs] == [
        ("other", 5, ["a"]), ("other", 5, ["b"])]
    assert jobs[0].data == {"args": ["a"], "kwargs": {"times": 2},
                            "task": {"backend": "default", "takes_context": False}}
    assert sent == results
    assert tasks.shout.get_backend().get_result(results[1].id).args == ["b"]


def test_the_backend_s_options_apply_to_every_call(tasks: Any, qless: Client) -> None:
    results = tasks.tagged.get_backend().enqueue_many(tasks.tagged, [((1,), {}), ((2,), {})])
    jobs = qless.get_jobs([r.id for r in results])
    assert [(job.tags, job.retries) for job in jobs] == [(("tasks", "tagged"), 2)] * 2


def test_a_bad_call_in_the_middle_writes_nothing(
    tasks: Any, keyspace: Any, sent: list[Any]
) -> None:
    calls: list[Any] = [((1, 2), {}), ((1, float("nan")), {}), ((3, 4), {})]
    with pytest.raises(TaskArgumentsError) as raised:
        enqueue_many(tasks.add, calls)
    assert any("call #1; nothing was enqueued" in note for note in raised.value.__notes__)
    assert keyspace() == {} and sent == []


@pytest.mark.parametrize("atomic", [False, True], ids=["now", "in-a-transaction"])
def test_a_call_nested_too_deeply_writes_nothing(
    tasks: Any, keyspace: Any, sent: list[Any], atomic: bool
) -> None:
    calls: list[Any] = [((1, 2), {}), ((nested(1_000), 2), {}), ((3, 4), {})]
    with pytest.raises(TaskArgumentsError, match="nested too deeply") as raised:
        if atomic:
            with transaction.atomic():
                enqueue_many(tasks.add, calls)
        else:
            enqueue_many(tasks.add, calls)
    assert isinstance(raised.value.__cause__, JobDataError)
    assert any("call #1; nothing was enqueued" in note for note in raised.value.__notes__)
    assert keyspace() == {} and sent == [] and not OutboxEntry.objects.exists()


def test_inside_a_transaction_rollback_puts_nothing_and_commit_puts_all(
    tasks: Any, qless: Client, keyspace: Any, sent: list[Any]
) -> None:
    with pytest.raises(RollbackError), transaction.atomic():
        enqueue_many(tasks.add, [((1, 2), {}), ((3, 4), {})])
        raise RollbackError
    assert keyspace() == {} and OutboxEntry.objects.count() == 0
    with transaction.atomic():
        results = enqueue_many(tasks.add, [((1, 2), {}), ((3, 4), {})])
        assert keyspace() == {} and sent == []
    assert [job.jid for job in qless.get_jobs([r.id for r in results])] == [
        r.id for r in results]
    assert sent == results and all(r.enqueued_at for r in results)
    assert OutboxEntry.objects.count() == 0


def test_another_backend_enqueues_one_by_one(tasks: Any) -> None:
    results = enqueue_many(tasks.on_dummy, [((), {}), ((), {})])
    assert len(results) == 2 and results[0].backend == "dummy"
