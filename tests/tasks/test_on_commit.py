"""Inside `transaction.atomic()` the put waits for the commit, as `@qless_job`'s does."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from django_qless.core import Client
from django_qless.tasks.compat import task_enqueued

pytestmark = pytest.mark.django_db(transaction=True)


class RollbackError(Exception):
    """Raised to roll a transaction back."""


def test_put_waits_for_commit_and_the_id_is_returned_at_once(
    tasks: Any, qless: Client, keyspace: Any
) -> None:
    sent: list[Any] = []
    task_enqueued.connect(receiver := lambda sender, task_result, **kw: sent.append(task_result))
    try:
        with transaction.atomic():
            result = tasks.add.enqueue(1, 2)
            assert keyspace() == {} and sent == [] and result.enqueued_at is None
        assert qless.get_job(result.id) is not None
    finally:
        task_enqueued.disconnect(receiver)
    assert sent == [result] and result.enqueued_at is not None


def test_rollback_puts_nothing(tasks: Any, keyspace: Any) -> None:
    with pytest.raises(RollbackError), transaction.atomic():
        tasks.add.enqueue(1, 2)
        raise RollbackError
    assert keyspace() == {}


def test_enqueue_on_commit_false_puts_at_once(
    tasks: Any, settings: Any, qless_settings: dict[str, Any], qless: Client
) -> None:
    settings.QLESS = {**qless_settings, "ENQUEUE_ON_COMMIT": False}
    with transaction.atomic():
        result = tasks.add.enqueue(1, 2)
        assert qless.get_job(result.id) is not None
