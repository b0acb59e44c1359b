"""The outbox: on-commit enqueues are rows of the transaction, put after it or by the sweep."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.utils import timezone

from django_qless import signals
from django_qless.conf import get_settings
from django_qless.core import Client, keys
from django_qless.core.sweep_lock import SweepLock
from django_qless.outbox import backlog
from django_qless.outbox.models import OutboxEntry
from django_qless.outbox.sweeper import Sweeper, sweep
from tests.testapp.models import Note
from tests.testapp.qless_jobs import add

pytestmark = pytest.mark.django_db(transaction=True)

UNREACHABLE = "redis://127.0.0.1:1/0"


class RollbackError(Exception):
    """Raised to roll a transaction back."""


@pytest.fixture
def enqueued() -> Iterator[list[dict[str, Any]]]:
    """Every `job_enqueued` sent during the test."""
    sent: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        sent.append(kwargs)

    signals.job_enqueued.connect(receiver)
    yield sent
    signals.job_enqueued.disconnect(receiver)


@pytest.fixture
def redis_down(settings: Any, qless_settings: dict[str, Any]) -> Iterator[None]:
    """QLESS pointed at a port nothing listens on; back on the suite's server afterwards."""
    good = dict(qless_settings)
    settings.QLESS = {**good, "URL": UNREACHABLE}
    yield
    settings.QLESS = good


def back_up(settings: Any, qless_url: str) -> None:
    """Point QLESS at the suite's redis-server again."""
    settings.QLESS = {"URL": qless_url}


def age_rows(seconds: float = 60) -> None:
    """Make every row look written `seconds` ago (a sweep only takes rows past its age)."""
    OutboxEntry.objects.update(created=timezone.now() - timedelta(seconds=seconds))


def sweep_now() -> Any:
    """One sweep of the default database with the current settings."""
    return sweep(get_settings().outbox, ["default"])


def test_the_row_is_written_in_the_transaction_and_deleted_after_the_put(
    qless: Client, keyspace: Any, enqueued: list[dict[str, Any]]
) -> None:
    with transaction.atomic():
        jid = add.using(tags=["t"], priority=3, retries=2, delay=30).enqueue(1, 2)
        [row] = OutboxEntry.objects.all()
        assert keyspace() == {} and enqueued == []
    assert (row.jid, row.klass, row.queue, row.connection) == (
        jid, "tests.testapp.qless_jobs.add", "default", "default")
    assert (row.tags, row.priority, row.retries, row.unique) == (["t"], 3, 2, "")
    assert row.data == '{"args":[1,2],"kwargs":{}}'
    assert abs(row.not_before - (time.time() + 30)) < 5
    job = qless.get_job(jid)
    assert job is not None and job.state == "scheduled" and job.tags == ("t",)
    assert OutboxEntry.objects.count() == 0
    assert [sent["jid"] for sent in enqueued] == [jid]


def test_redis_down_at_commit_keeps_every_row_and_the_later_callbacks_run(
    redis_down: None, caplog: pytest.LogCaptureFixture
) -> None:
    after: list[str] = []
    with caplog.at_level(logging.WARNING, logger="django_qless.outbox"), transaction.atomic():
        Note.objects.create(text="committed")
        jids = [add.enqueue(n, n) for n in range(3)]
        transaction.on_commit(lambda: after.append("ran"))
    assert Note.objects.filter(text="committed").exists()
    assert sorted(OutboxEntry.objects.values_list("jid", flat=True)) == sorted(jids)
    assert after == ["ran"]
    warned = [r.getMessage() for r in caplog.records if "stays for the sweep" in r.getMessage()]
    assert len(warned) == 3 and all(jid in line for jid, line in zip(jids, warned, strict=True))


def test_the_sweep_puts_the_rows_left_once_redis_is_back(
    settings: Any, qless_url: str, qless_settings: dict[str, Any],
    enqueued: list[dict[str, Any]],
) -> None:
    settings.QLESS = {"URL": UNREACHABLE}
    with transaction.atomic():
        jids = [add.enqueue(n, n) for n in range(3)]
    back_up(settings, qless_url)
    assert sweep_now().put == []  # younger than OUTBOX_SWEEP_AGE: the commit may still put
    age_rows()
    report = sweep_now()
    assert sorted(report.put) == sorted(jids) and report.failed == 0
    client = Client(redis.Redis.from_url(qless_url))
    assert all(client.get_job(jid) is not None for jid in jids)
    assert OutboxEntry.objects.count() == 0
    assert sorted(sent["jid"] for sent in enqueued) == sorted(jids)
    assert sweep_now().put == []


def test_a_late_sweep_keeps_the_absolute_due_time(
    settings: Any, qless_url: str, redis_client: redis.Redis
) -> None:
    settings.QLESS = {"URL": UNREACHABLE}
    with transaction.atomic():
        due = add.using(delay=30).enqueue(1, 1)
        overdue = add.using(delay=30).enqueue(2, 2)
    back_up(settings, qless_url)
    age_rows()
    # As if the sweep came 40 s after the enqueue: the second job is due already.
    OutboxEntry.objects.filter(jid=overdue).update(not_before=time.time() - 10)
    expected = OutboxEntry.objects.get(jid=due).not_before
    sweep_now()
    scheduled = dict(redis_client.zrange(keys.queue_set("default", "scheduled"), 0, -1,
                                         withscores=True))
    assert abs(scheduled[due] - expected) < 1
    assert overdue not in scheduled
    assert redis_client.zscore(keys.queue_set("default", "work"), overdue) is not None


def test_the_sweep_never_replaces_or_reruns_a_completed_job(
    qless: Client, redis_client: redis.Redis
) -> None:
    jid = add.enqueue(1, 2)
    [job] = qless.queue("default").pop()
    job.complete()
    history = redis_client.lrange(f"ql:j:{jid}-history", 0, -1)
    OutboxEntry.objects.create(connection="default", queue="default", jid=jid,
                               klass=job.klass, data=job.raw_data, not_before=0,
                               created=timezone.now() - timedelta(minutes=1))
    report = sweep_now()
    assert (report.put, report.found) == ([], [jid])
    assert OutboxEntry.objects.count() == 0
    completed = qless.get_job(jid)
    assert completed is not None and completed.state == "complete"
    assert redis_client.lrange(f"ql:j:{jid}-history", 0, -1) == history


def test_a_rolled_back_transaction_leaves_no_row_and_no_job(keyspace: Any) -> None:
    with pytest.raises(RollbackError), transaction.atomic():
        add.enqueue(1, 2)
        raise RollbackError
    assert OutboxEntry.objects.count() == 0
    assert keyspace() == {}


def test_outbox_off_keeps_the_old_on_commit_put(
    settings: Any, qless_url: str, qless: Client
) -> None:
    settings.QLESS = {"URL": qless_url, "OUTBOX": False}
    with transaction.atomic():
        jid = add.enqueue(1, 2)
        assert OutboxEntry.objects.count() == 0
    assert qless.get_job(jid) is not None


def test_outside_a_transaction_nothing_is_written_and_errors_reach_the_caller(
    redis_down: None,
) -> None:
    with pytest.raises(redis.ConnectionError):
        add.enqueue(1, 2)
    assert OutboxEntry.objects.count() == 0


def test_a_jid_enqueued_twice_in_one_transaction_is_one_row_with_the_newest_data(
    qless: Client,
) -> None:
    with transaction.atomic():
        add.using(jid="same-jid").enqueue(1, 1)
        add.using(jid="same-jid").enqueue(2, 2)
        [row] = OutboxEntry.objects.all()
        assert row.data == '{"args":[2,2],"kwargs":{}}'
    job = qless.get_job("same-jid")
    assert job is not None and job.data == {"args": [2, 2], "kwargs": {}}
    assert OutboxEntry.objects.count() == 0


def test_a_unique_job_at_commit_leaves_an_existing_job_alone(
    qless: Client, enqueued: list[dict[str, Any]]
) -> None:
    first = add.using(unique=True).enqueue(5, 5)
    enqueued.clear()
    with transaction.atomic():
        again = add.using(unique=True, priority=9).enqueue(5, 5)
    job = qless.get_job(first)
    assert again == first and job is not None and job.priority == 0
    assert enqueued == [] and OutboxEntry.objects.count() == 0


def test_a_tracked_job_swept_is_tracked(
    settings: Any, qless_url: str, qless_settings: dict[str, Any]
) -> None:
    settings.QLESS = {"URL": UNREACHABLE}
    with transaction.atomic():
        jid = add.using(tracked=True).enqueue(1, 1)
    back_up(settings, qless_url)
    age_rows()
    sweep_now()
    client = Client(redis.Redis.from_url(qless_url))
    job = client.get_job(jid)
    assert job is not None and job.tracked


def test_a_sweep_skips_a_redis_whose_lock_another_sweeper_holds(
    settings: Any, qless_url: str, redis_client: redis.Redis
) -> None:
    settings.QLESS = {"URL": UNREACHABLE}
    with transaction.atomic():
        add.enqueue(1, 1)
    back_up(settings, qless_url)
    age_rows()
    other = SweepLock(redis_client, ttl=10)
    assert other.acquire()
    report = sweep_now()
    assert (report.put, report.busy) == ([], 1)
    assert OutboxEntry.objects.count() == 1
    other.release()
    assert len(sweep_now().put) == 1
    assert redis_client.exists(keys.OUTBOX_SWEEP_LOCK) == 0  # released after the sweep


def test_sweep_lock_release_leaves_another_holders_lock(redis_client: redis.Redis) -> None:
    mine = SweepLock(redis_client, ttl=0.05)
    assert mine.acquire()
    time.sleep(0.1)  # expired: another sweeper may take it
    theirs = SweepLock(redis_client, ttl=10)
    assert theirs.acquire()
    mine.release()
    assert redis_client.get(keys.OUTBOX_SWEEP_LOCK) == theirs.token


def test_a_sweep_stops_at_the_batch_size_per_pass_and_continues(
    settings: Any, qless_url: str
) -> None:
    settings.QLESS = {"URL": UNREACHABLE, "OUTBOX_BATCH_SIZE": 2}
    with transaction.atomic():
        jids = [add.enqueue(n, n) for n in range(5)]
    settings.QLESS = {"URL": qless_url, "OUTBOX_BATCH_SIZE": 2}
    age_rows()
    assert sorted(sweep_now().put) == sorted(jids)
    assert OutboxEntry.objects.count() == 0


def test_the_worker_sweeper_thread_puts_left_rows(
    settings: Any, qless_url: str
) -> None:
    settings.QLESS = {"URL": UNREACHABLE}
    with transaction.atomic():
        jid = add.enqueue(1, 1)
    settings.QLESS = {"URL": qless_url, "OUTBOX_SWEEP_AGE": 0.01,
                      "OUTBOX_SWEEP_INTERVAL": 0.05}
    sweeper = Sweeper(["default"])
    sweeper.start()
    deadline = time.monotonic() + 10
    while OutboxEntry.objects.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    sweeper.halt()
    assert not sweeper.is_alive()
    assert Client(redis.Redis.from_url(qless_url)).get_job(jid) is not None
    assert OutboxEntry.objects.count() == 0


def test_the_worker_sweeper_does_nothing_when_the_outbox_is_off(
    settings: Any, qless_url: str
) -> None:
    settings.QLESS = {"URL": qless_url, "OUTBOX": False}
    sweeper = Sweeper(["default"])
    sweeper.start()
    sweeper.join(2)
    assert not sweeper.is_alive()


def test_manage_py_qless_outbox_prints_what_it_put(settings: Any, qless_url: str) -> None:
    settings.QLESS = {"URL": UNREACHABLE}
    with transaction.atomic():
        jid = add.enqueue(1, 1)
    back_up(settings, qless_url)
    out = StringIO()
    call_command("qless_outbox", "--age", "0", "--database", "default", stdout=out)
    assert f"put {jid}" in out.getvalue()
    assert "outbox default: 1 put, 0 already in Redis, 0 rows left" in out.getvalue()


def test_manage_py_qless_outbox_fails_while_redis_is_unreachable(redis_down: None) -> None:
    with transaction.atomic():
        add.enqueue(1, 1)
    with pytest.raises(CommandError, match="1 rows could not be put"):
        call_command("qless_outbox", "--age", "0", "--database", "default", stdout=StringIO())
    assert OutboxEntry.objects.count() == 1


def test_backlog_counts_rows_and_the_oldest_age(redis_down: None) -> None:
    empty = backlog()
    assert (empty.rows, empty.oldest_age) == (0, None)
    with transaction.atomic():
        add.enqueue(1, 1)
        add.enqueue(2, 2)
    age_rows(120)
    found = backlog()
    assert found.rows == 2 and found.oldest_age is not None and 119 < found.oldest_age < 130


def test_manage_py_qless_outbox_refuses_an_unknown_database() -> None:
    with pytest.raises(CommandError, match="unknown database nowhere"):
        call_command("qless_outbox", "--database", "nowhere", stdout=StringIO())


def test_a_row_older_than_the_sweep_age_at_commit_leaves_a_swept_job_alone(
    qless: Client, settings: Any, qless_settings: dict[str, Any]
) -> None:
    """A transaction open past the sweep age: the sweep may have put (and a worker popped)
    the job by the time the commit's own put runs, which must not replace it."""
    settings.QLESS = {**qless_settings, "OUTBOX_SWEEP_AGE": 0.2}
    with transaction.atomic():
        jid = add.using(jid="long-transaction").enqueue(1, 2)
        time.sleep(0.3)
        qless.queue("default").put(add.name, {"args": [1, 2], "kwargs": {}}, jid=jid)
        qless.queue("default").pop()
    job = qless.get_job(jid)
    assert job is not None and job.state == "running"
    assert OutboxEntry.objects.count() == 0


def test_a_fresh_row_is_put_plainly_and_replaces_a_job_of_that_jid(qless: Client) -> None:
    qless.queue("old").put(add.name, {"args": [0, 0], "kwargs": {}}, jid="re-put")
    with transaction.atomic():
        add.using(jid="re-put").enqueue(1, 2)
    job = qless.get_job("re-put")
    assert job is not None and (job.queue_name, job.data["args"]) == ("default", [1, 2])
