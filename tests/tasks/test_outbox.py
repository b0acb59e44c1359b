"""QlessBackend's on-commit enqueue goes through the outbox, as `@qless_job`'s does."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.db import transaction
from django.utils import timezone

from django_qless.conf import get_settings
from django_qless.core import Client, keys
from django_qless.outbox.models import OutboxEntry
from django_qless.outbox.sweeper import sweep
from django_qless.tasks.compat import task_enqueued

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def announced() -> Iterator[list[Any]]:
    """Every `task_enqueued` result sent during the test."""
    sent: list[Any] = []

    def receiver(sender: Any, task_result: Any, **kwargs: Any) -> None:
        sent.append(task_result)

    task_enqueued.connect(receiver)
    yield sent
    task_enqueued.disconnect(receiver)


def test_the_row_is_written_in_the_transaction_then_put(
    tasks: Any, qless: Client, announced: list[Any]
) -> None:
    with transaction.atomic():
        result = tasks.tagged.enqueue(7)
        [row] = OutboxEntry.objects.all()
        assert qless.get_job(result.id) is None and announced == []
    assert (row.jid, row.task_backend, row.klass, row.tags, row.retries) == (
        result.id, "tagged", "tests.tasks.taskapp.tasks.tagged", ["tasks", "tagged"], 2)
    assert qless.get_job(result.id) is not None
    assert OutboxEntry.objects.count() == 0
    assert announced == [result] and result.enqueued_at is not None


def test_redis_down_at_commit_the_sweep_puts_the_task_and_announces_it(
    tasks: Any, settings: Any, qless_settings: dict[str, Any], announced: list[Any],
    redis_client: redis.Redis,
) -> None:
    good = dict(qless_settings)
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0"}
    run_after = timezone.now() + timedelta(seconds=60)
    with transaction.atomic():
        later = tasks.add.using(run_after=run_after).enqueue(1, 2)
        now = tasks.shout.enqueue("hi")
    assert sorted(OutboxEntry.objects.values_list("jid", flat=True)) == sorted(
        [later.id, now.id])
    assert announced == []
    settings.QLESS = good
    OutboxEntry.objects.update(created=timezone.now() - timedelta(minutes=1))
    report = sweep(get_settings().outbox, ["default"])
    assert sorted(report.put) == sorted([later.id, now.id])
    assert sorted(result.id for result in announced) == sorted([later.id, now.id])
    score = redis_client.zscore(keys.queue_set("default", "scheduled"), later.id)
    assert score is not None and abs(score - run_after.timestamp()) < 1
    assert redis_client.zscore(keys.queue_set("other", "work"), now.id) is not None
    assert OutboxEntry.objects.count() == 0


def test_outbox_off_keeps_the_old_on_commit_put(
    tasks: Any, settings: Any, qless_settings: dict[str, Any], qless: Client
) -> None:
    settings.QLESS = {**qless_settings, "OUTBOX": False}
    with transaction.atomic():
        result = tasks.add.enqueue(1, 2)
        assert OutboxEntry.objects.count() == 0
    assert qless.get_job(result.id) is not None
