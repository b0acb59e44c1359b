"""Slot jobs of cron schedules against a real Redis and a hand-moved clock."""

from __future__ import annotations

from django_qless.core import Client
from django_qless.core.crons import LEAD, CronStore, slot_jid
from tests.recurring.conftest import MIDNIGHT, Clock
from tests.recurring.cron_helpers import QUEUE, define, slot_jobs, slot_of, tick_until


def test_a_slot_is_put_ahead_delayed_to_its_instant(client: Client, clock: Clock) -> None:
    definition = define(client, "*/5 * * * *")
    store = CronStore(client)
    assert store.create_due() == []  # 00:05 is more than the lead time away
    clock.now = MIDNIGHT + 300 - LEAD + 10
    [outcome] = store.create_due()
    assert outcome.created
    assert outcome.jid == slot_jid("sched", MIDNIGHT + 300, definition.digest)
    [put] = slot_jobs(client)
    assert (put.state, put.runs_at) == ("scheduled", MIDNIGHT + 300)
    # Every later look finds it done: one job for the slot, whoever looks.
    assert store.create_due() == []
    assert len(slot_jobs(client)) == 1


def test_a_slot_job_is_never_runnable_early(client: Client, clock: Clock) -> None:
    define(client, "*/5 * * * *")
    clock.now = MIDNIGHT + 290
    CronStore(client).create_due()
    queue = client.queue(QUEUE)
    clock.now = MIDNIGHT + 299.9
    assert queue.pop() == []
    clock.now = MIDNIGHT + 300
    [job] = queue.pop()
    assert slot_of(job.jid) == MIDNIGHT + 300


def test_ticks_put_each_slot_once(client: Client, clock: Clock) -> None:
    define(client, "*/5 * * * *")
    tick_until(client, clock, MIDNIGHT + 3600, step=7)
    puts = slot_jobs(client)
    assert [slot_of(p.jid) for p in puts] == [MIDNIGHT + 300 * k for k in range(1, 13)]
    assert all(p.runs_at == slot_of(p.jid) for p in puts)
