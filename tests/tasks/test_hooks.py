"""Hooks and Django tasks: metadata at enqueue (single, bulk, outbox), a run hook around each."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest
from django.core.management import call_command
from django.db import transaction

from django_qless.core import Client
from django_qless.hooks import (
    META_KEY,
    JobRun,
    PendingJob,
    add_enqueue_hook,
    add_run_hook,
    remove_enqueue_hook,
    remove_run_hook,
)
from django_qless.outbox.models import OutboxEntry
from django_qless.tasks.compat import TaskResultStatus


def trace(job: PendingJob) -> dict[str, Any]:
    """An enqueue hook standing for a trace context."""
    return {"traceparent": f"00-{job.jid}-01"}


@pytest.fixture
def traced() -> Iterator[None]:
    """`trace` added as an enqueue hook."""
    add_enqueue_hook(trace)
    yield
    remove_enqueue_hook(trace)


def meta(client: Client, jid: str) -> Any:
    """The metadata of a job in Redis."""
    job = client.get_job(jid)
    assert job is not None
    return job.data.get(META_KEY)


def test_a_task_and_a_bulk_of_tasks_carry_the_entries(
    traced: None, tasks: ModuleType, qless: Client
) -> None:
    one = tasks.add.enqueue(1, 2)
    many = tasks.add.get_backend().enqueue_many(tasks.add, [((3, 4), {}), ((5, 6), {})])
    for result in [one, *many]:
        assert meta(qless, result.id) == {"traceparent": f"00-{result.id}-01"}
    # The task's own keys are untouched: its result reads as before.
    assert tasks.add.get_result(one.id).args == [1, 2]
    assert qless.get_job(one.id).data["task"]["backend"] == "default"  # type: ignore[union-attr]


@pytest.mark.django_db(transaction=True)
def test_an_outboxed_task_row_holds_the_entries(
    traced: None, tasks: ModuleType, qless: Client
) -> None:
    with transaction.atomic():
        result = tasks.add.enqueue(1, 2)
        [row] = OutboxEntry.objects.all()
        assert json.loads(row.data)[META_KEY] == {"traceparent": f"00-{result.id}-01"}
    assert meta(qless, result.id) == {"traceparent": f"00-{result.id}-01"}


def test_a_run_hook_wraps_each_task_and_sees_its_failure(
    traced: None, tasks: ModuleType, qless: Client, django_db_blocker: Any
) -> None:
    seen: list[tuple[str, str, Any, str | None]] = []

    @contextmanager
    def around(run: JobRun) -> Iterator[None]:
        seen.append(("enter", run.jid, dict(run.metadata), None))
        try:
            yield
        except Exception as exc:
            seen.append(("exit", run.jid, run.attempt, type(exc).__name__))
            raise
        seen.append(("exit", run.jid, run.attempt, None))

    ok = tasks.add.enqueue(2, 3)
    bad = tasks.explode.enqueue("no")
    add_run_hook(around)
    try:
        with django_db_blocker.unblock():
            call_command("qless_worker", "default", burst=True, verbosity=0)
    finally:
        remove_run_hook(around)
    assert seen == [
        ("enter", ok.id, {"traceparent": f"00-{ok.id}-01"}, None),
        ("exit", ok.id, 1, None),
        ("enter", bad.id, {"traceparent": f"00-{bad.id}-01"}, None),
        ("exit", bad.id, 1, "LookupError"),
    ]
    assert tasks.add.get_result(ok.id).status == TaskResultStatus.SUCCESSFUL
    assert tasks.explode.get_result(bad.id).status == TaskResultStatus.FAILED
