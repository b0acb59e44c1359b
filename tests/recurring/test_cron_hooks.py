"""Cron slot puts run the enqueue hooks in the scheduling process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_qless.core import Client
from django_qless.core.crons import CronStore
from django_qless.hooks import META_KEY, PendingJob, add_enqueue_hook, remove_enqueue_hook
from tests.recurring.conftest import Clock

from .cron_helpers import define, slot_jobs, utc


@pytest.fixture
def scheduled_by() -> Iterator[list[PendingJob]]:
    """An enqueue hook naming the process that put the slot job."""
    seen: list[PendingJob] = []

    def hook(job: PendingJob) -> dict[str, str]:
        seen.append(job)
        return {"put_by": "scheduler"}

    add_enqueue_hook(hook)
    yield seen
    remove_enqueue_hook(hook)


def test_slot_jobs_and_run_now_carry_the_entries(
    client: Client, clock: Clock, scheduled_by: list[PendingJob]
) -> None:
    clock.now = utc("2030-01-01 00:59:50")
    definition = define(client, "0 * * * *")
    CronStore(client).create_due()
    [slot] = slot_jobs(client)
    now = CronStore(client).put_now(definition, "tok")
    for jid in (slot.jid, now.jid):
        job = client.get_job(jid)
        assert job is not None and job.data[META_KEY] == {"put_by": "scheduler"}
        assert job.data["args"] == ["t"]
    assert [job.jid for job in scheduled_by] == [slot.jid, now.jid]
    assert scheduled_by[0].klass == "recurapp.vacuum" and scheduled_by[0].queue == "cron"
