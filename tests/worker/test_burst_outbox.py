"""A burst worker sweeps the outbox: a jid whose commit-time put failed is put and run."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from django_qless.conf import get_settings
from django_qless.core import Client
from django_qless.core.sweep_lock import SweepLock
from django_qless.outbox import drain as drain_module
from django_qless.outbox.drain import BUSY_PAUSE, BurstDrain
from django_qless.outbox.models import OutboxEntry
from django_qless.outbox.sweeper import Sweeper
from django_qless.worker import Worker
from tests.workerapp.qless_jobs import mark

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "other"])

UNREACHABLE = "redis://127.0.0.1:1/0"


def test_a_burst_worker_started_right_after_a_failed_put_puts_and_runs_it(
    settings: Any, qless_settings: dict[str, Any], qless: Client,
    run_worker: Callable[..., Worker], ledger: Callable[[], list[dict[str, Any]]],
) -> None:
    good = dict(qless_settings)
    settings.QLESS = {**good, "URL": UNREACHABLE}
    with transaction.atomic():
        jid = mark.using(queue="q").enqueue("from the outbox")
    assert list(OutboxEntry.objects.values_list("jid", flat=True)) == [jid]
    settings.QLESS = good  # Redis is back; a burst worker starts at once
    started = time.monotonic()
    worker = run_worker("q")
    took = time.monotonic() - started
    assert [(entry["jid"], entry["tag"]) for entry in ledger()] == [(jid, "from the outbox")]
    job = qless.get_job(jid)
    assert job is not None and job.state == "complete"
    assert not OutboxEntry.objects.exists()
    assert worker.jobs_run == 1
    # It waited for the row to reach OUTBOX_SWEEP_AGE (5 s), not much longer.
    assert took < 5 + 20


def test_a_burst_sweep_that_meets_another_sweeper_pops_again_even_with_no_row_left(
    settings: Any, qless_settings: dict[str, Any], qless: Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good = dict(qless_settings)
    settings.QLESS = {**good, "URL": UNREACHABLE}
    with transaction.atomic():
        mark.using(queue="q").enqueue("from the outbox")
    OutboxEntry.objects.update(created=timezone.now() - timedelta(seconds=10))  # due
    settings.QLESS = good
    drain = BurstDrain()
    other = SweepLock(qless.redis, ttl=10)  # the worker's sweeping thread, say
    assert other.acquire()
    swept = drain_module.sweep

    def racing(*args: Any) -> Any:
        report = swept(*args)  # the row is due, but the other sweeper holds the lock...
        OutboxEntry.objects.all().delete()  # ...puts its job and deletes it meanwhile
        return report

    monkeypatch.setattr(drain_module, "sweep", racing)
    # The job just put is the burst's to pop: it must not call its queues empty now.
    assert drain.step() == BUSY_PAUSE
    other.release()
    assert drain.step() is None


def test_a_burst_worker_leaves_rows_written_after_it_started(
    settings: Any, qless_settings: dict[str, Any], run_worker: Callable[..., Worker],
    ledger: Callable[[], list[dict[str, Any]]],
) -> None:
    good = dict(qless_settings)
    settings.QLESS = {**good, "URL": UNREACHABLE}
    with transaction.atomic():
        jid = mark.using(queue="q").enqueue("later")
    # The row looks written after the worker's start: the next sweep's, not this burst's.
    OutboxEntry.objects.update(created=OutboxEntry.objects.get().created.replace(year=2999))
    settings.QLESS = good
    started = time.monotonic()
    run_worker("q")
    assert time.monotonic() - started < 15  # it did not wait for that row
    assert ledger() == []
    assert list(OutboxEntry.objects.values_list("jid", flat=True)) == [jid]


def test_the_sweeper_thread_sweeps_as_it_starts(
    settings: Any, qless_settings: dict[str, Any], qless: Client,
) -> None:
    good = dict(qless_settings)
    settings.QLESS = {**good, "URL": UNREACHABLE}
    with transaction.atomic():
        jid = mark.using(queue="q").enqueue("swept")
    # Written long ago (past OUTBOX_SWEEP_AGE): due for the very first sweep.
    OutboxEntry.objects.update(created=timezone.now() - timedelta(minutes=1))
    settings.QLESS = good
    sweeper = Sweeper(["default"])
    started = time.monotonic()
    sweeper.start()
    interval = get_settings().outbox.sweep_interval
    while OutboxEntry.objects.exists() and time.monotonic() - started < interval - 0.5:
        time.sleep(0.02)
    took = time.monotonic() - started
    sweeper.halt()
    assert not OutboxEntry.objects.exists(), "not swept before the first interval ended"
    assert took < interval and qless.get_job(jid) is not None
