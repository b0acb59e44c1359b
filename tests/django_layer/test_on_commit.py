"""Inside `transaction.atomic()` the put waits for the commit; a rollback puts nothing."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.db import transaction

from django_qless.core import Client, JobDataError
from tests.testapp.models import Note
from tests.testapp.qless_jobs import add, echo

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "other"])


class RollbackError(Exception):
    """Raised to roll a transaction back."""


def test_put_waits_for_commit_and_jid_is_returned_at_once(qless: Client, keyspace: Any) -> None:
    with transaction.atomic():
        Note.objects.create(text="row the job will read")
        jid = add.enqueue(1, 2)
        assert len(jid) == 32
        assert keyspace() == {}
        assert qless.get_job(jid) is None
    job = qless.get_job(jid)
    assert job is not None
    assert job.data == {"args": [1, 2], "kwargs": {}}


def test_rollback_puts_nothing(qless: Client, keyspace: Any) -> None:
    with pytest.raises(RollbackError), transaction.atomic():
        add.enqueue(1, 2)
        raise RollbackError
    assert keyspace() == {}


def test_rolled_back_savepoint_drops_only_its_jobs(qless: Client) -> None:
    with transaction.atomic():
        kept = add.enqueue(1, 1)
        with pytest.raises(RollbackError), transaction.atomic():
            dropped = add.enqueue(2, 2)
            raise RollbackError
    assert qless.get_job(kept) is not None
    assert qless.get_job(dropped) is None


def test_jobs_are_put_in_enqueue_order_on_commit(qless: Client) -> None:
    with transaction.atomic():
        jids = [add.enqueue(i, i) for i in range(3)]
    assert [job.jid for job in qless.queue("default").peek(3)] == jids


def test_outside_a_transaction_the_put_is_immediate(qless: Client) -> None:
    jid = add.enqueue(1, 2)
    assert qless.get_job(jid) is not None


def test_on_commit_false_puts_inside_the_transaction(qless: Client) -> None:
    with transaction.atomic():
        jid = add.using(on_commit=False).enqueue(1, 2)
        assert qless.get_job(jid) is not None


def test_setting_turns_deferral_off(settings: Any, qless_url: str, qless: Client) -> None:
    settings.QLESS = {"URL": qless_url, "ENQUEUE_ON_COMMIT": False}
    with transaction.atomic():
        jid = add.enqueue(1, 2)
        assert qless.get_job(jid) is not None


def test_deferral_follows_the_database_alias(qless: Client) -> None:
    with transaction.atomic(using="other"):
        on_other = add.using(using="other").enqueue(1, 2)
        on_default = add.enqueue(3, 4)  # the default alias is not in a transaction
        assert qless.get_job(on_other) is None
        assert qless.get_job(on_default) is not None
    assert qless.get_job(on_other) is not None


def test_rollback_on_the_other_alias(qless: Client, keyspace: Any) -> None:
    with pytest.raises(RollbackError), transaction.atomic(using="other"):
        add.using(using="other").enqueue(1, 2)
        raise RollbackError
    assert keyspace() == {}


def test_bad_arguments_fail_at_the_call_not_at_commit(qless: Client, keyspace: Any) -> None:
    with transaction.atomic():
        with pytest.raises(JobDataError):
            echo.enqueue({1, 2})
        jid = echo.enqueue([1, 2])
    assert qless.get_job(jid) is not None
    assert len(keyspace()) > 0


def test_without_the_outbox_a_redis_failure_at_commit_is_raised_after_the_commit(
    settings: Any, qless_url: str
) -> None:
    # With the outbox (the default) the row stays instead: tests/django_layer/test_outbox.py.
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0", "OUTBOX": False}
    with pytest.raises(redis.ConnectionError), transaction.atomic():
        Note.objects.create(text="committed anyway")
        add.enqueue(1, 2)
    assert Note.objects.filter(text="committed anyway").exists()
