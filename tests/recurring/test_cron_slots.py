"""Slot jobs of cron schedules against a real Redis and a hand-moved clock."""

from __future__ import annotations

import json

import pytest

from django_qless.core import Client
from django_qless.core.crons import LEAD, CronStore, slot_jid
from tests.recurring.conftest import MIDNIGHT, Clock
from tests.recurring.cron_helpers import (
    QUEUE,
    define,
    local,
    slot_jobs,
    slot_of,
    tick_through,
    tick_until,
    utc,
)


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


def runs(client: Client) -> list[float]:
    """The slot of every job of `sched`; a scheduled one is checked to run at its instant."""
    puts = slot_jobs(client)
    for put in puts:
        assert put.runs_at == slot_of(put.jid) or put.state == "waiting", put
    return [slot_of(p.jid) for p in puts]


@pytest.mark.parametrize(("tz", "expression", "start", "end", "expected"), [
    # Spring forward, Paris 2024-03-31: 02:00 CET jumps to 03:00 CEST; 02:30 runs at the jump.
    ("Europe/Paris", "30 2 * * *", "2024-03-30 12:00", "2024-04-01 06:00",
     ["2024-03-31 01:00", "2024-04-01 00:30"]),
    # Fall back, Paris 2024-10-27: 03:00 CEST back to 02:00 CET; 02:30 runs once, the first.
    ("Europe/Paris", "30 2 * * *", "2024-10-26 12:00", "2024-10-28 06:00",
     ["2024-10-27 00:30", "2024-10-28 01:30"]),
    # Every quarter hour through the repeated hour: the repeated wall times do not run again.
    ("Europe/Paris", "*/15 2 * * *", "2024-10-26 12:00", "2024-10-27 06:00",
     ["2024-10-27 00:00", "2024-10-27 00:15", "2024-10-27 00:30", "2024-10-27 00:45"]),
    # Every quarter hour through the skipped hour: all four run once, at the jump.
    ("Europe/Paris", "*/15 2 * * *", "2024-03-30 12:00", "2024-03-31 06:00",
     ["2024-03-31 01:00"]),
    # Spring forward, New York 2024-03-10: 02:00 EST jumps to 03:00 EDT.
    ("America/New_York", "30 2 * * *", "2024-03-09 12:00", "2024-03-11 12:00",
     ["2024-03-10 07:00", "2024-03-11 06:30"]),
    # Fall back, New York 2024-11-03: 02:00 EDT back to 01:00 EST; 01:30 runs once.
    ("America/New_York", "30 1 * * *", "2024-11-02 12:00", "2024-11-04 12:00",
     ["2024-11-03 05:30", "2024-11-04 06:30"]),
    # A daily 09:00 stays at 09:00 local across the change (no drift by an hour).
    ("America/New_York", "0 9 * * *", "2024-11-02 00:00", "2024-11-05 00:00",
     ["2024-11-02 13:00", "2024-11-03 14:00", "2024-11-04 14:00"]),
])
def test_daylight_saving(client: Client, clock: Clock, tz: str, expression: str, start: str,
                         end: str, expected: list[str]) -> None:
    clock.now = utc(start)
    define(client, expression, tz=tz)
    tick_until(client, clock, utc(end), step=20)
    assert runs(client) == [utc(text) for text in expected]


def test_month_ends(client: Client, clock: Clock) -> None:
    clock.now = utc("2024-01-15 00:00")
    define(client, "0 12 31 * *")
    tick_through(client, clock, utc("2024-12-31 23:00"))
    assert runs(client) == [utc(f"2024-{m:02}-31 12:00") for m in (1, 3, 5, 7, 8, 10, 12)]


def test_last_day_of_february_and_leap_day(client: Client, clock: Clock) -> None:
    clock.now = utc("2023-01-01 00:00")
    define(client, "0 0 29 2 *", tz="Europe/Paris")
    tick_through(client, clock, utc("2029-01-01 00:00"))
    assert runs(client) == [local("2024-02-29 00:00", "Europe/Paris"),
                            local("2028-02-29 00:00", "Europe/Paris")]


@pytest.mark.parametrize(("policy", "expected_hours"), [
    ("skip", []), ("latest", [5]), ("3", [3, 4, 5]), ("10", [1, 2, 3, 4, 5]),
])
def test_catch_up_after_downtime(client: Client, clock: Clock, policy: str,
                                 expected_hours: list[int]) -> None:
    define(client, "0 * * * *", catch_up=policy)
    # Nobody looked from midnight to 05:10: five hourly slots were missed.
    clock.now = MIDNIGHT + 5 * 3600 + 600
    CronStore(client).create_due()
    puts = slot_jobs(client)
    assert [slot_of(p.jid) for p in puts] == [MIDNIGHT + h * 3600 for h in expected_hours]
    assert all(p.state == "waiting" for p in puts)  # missed slots run at once
    # And the next slot is put ahead, once, as usual.
    clock.now = MIDNIGHT + 6 * 3600 - 30
    CronStore(client).create_due()
    assert slot_of(slot_jobs(client)[-1].jid) == MIDNIGHT + 6 * 3600
    assert len(slot_jobs(client)) == len(expected_hours) + 1


def test_catch_up_counts_slots_from_the_last_one_handled(client: Client, clock: Clock) -> None:
    define(client, "0 * * * *", catch_up="3")
    clock.now = MIDNIGHT + 3600 - 30
    CronStore(client).create_due()  # 01:00 put ahead
    clock.now = MIDNIGHT + 2 * 3600 + 600  # down from just before 01:00 to 02:10
    CronStore(client).create_due()
    assert runs(client) == [MIDNIGHT + 3600, MIDNIGHT + 2 * 3600]


def test_a_slot_a_little_late_runs_even_when_skipping(client: Client, clock: Clock) -> None:
    define(client, "0 * * * *", catch_up="skip")
    clock.now = MIDNIGHT + 3600 + 30  # the worker started 30 s after 01:00
    CronStore(client).create_due()
    [put] = slot_jobs(client)
    assert (slot_of(put.jid), put.state) == (MIDNIGHT + 3600, "waiting")


def test_other_clients_see_an_ordinary_scheduled_job(client: Client, clock: Clock) -> None:
    define(client, "*/5 * * * *", args=("events",))
    clock.now = MIDNIGHT + 270
    [outcome] = CronStore(client).create_due()
    # What any qless client reads: `get` and `jobs scheduled <queue>`.
    job = client.get_job(outcome.jid)
    assert job is not None
    assert (job.state, job.klass, job.queue_name) == ("scheduled", "recurapp.vacuum", QUEUE)
    assert job.data == {"args": ["events"], "kwargs": {}}
    assert outcome.jid in client.queue(QUEUE).jobs("scheduled")
    raw = json.loads(client.redis.hget(f"ql:j:{outcome.jid}", "data") or "{}")
    assert raw == {"args": ["events"], "kwargs": {}}


def test_a_dead_writer_loses_nothing(client: Client, clock: Clock) -> None:
    definition = define(client, "*/5 * * * *")
    clock.now = MIDNIGHT + 270
    store = CronStore(client)
    # The writer puts the slot job, then dies before moving the last slot forward.
    store.put_slots(definition, [MIDNIGHT + 300], clock.now)
    assert runs(client) == [MIDNIGHT + 300]
    # The next writer finds it there and does not put it again.
    [outcome] = store.create_due()
    assert not outcome.created and outcome.state == "scheduled"
    assert runs(client) == [MIDNIGHT + 300]


def test_a_stale_index_entry_is_dropped(client: Client, clock: Clock) -> None:
    client.redis.zadd("ql:django_qless:crons", {"gone": 0})
    assert CronStore(client).create_due() == []
    assert client.redis.zscore("ql:django_qless:crons", "gone") is None


def test_a_writer_beaten_by_a_change_takes_back_what_it_put(client: Client,
                                                            clock: Clock) -> None:
    old = define(client, "*/5 * * * *")
    clock.now = MIDNIGHT + 280

    class Racing(CronStore):
        """Its first put is followed by a sync changing the schedule (before its EXEC)."""

        raced = False

        def put_slots(self, definition, slots, now):  # type: ignore[no-untyped-def]
            outcomes = super().put_slots(definition, slots, now)
            if not self.raced:
                self.raced = True
                define(client, "*/5 * * * *", args=("new",))
            return outcomes

    outcomes = Racing(client).create_due()
    [put] = slot_jobs(client)
    assert not put.jid.endswith(old.digest[:8])
    assert [o.jid for o in outcomes if o.created] == [put.jid]
    job = client.get_job(put.jid)
    assert job is not None and job.data == {"args": ["new"], "kwargs": {}}


def test_downtime_across_spring_forward_runs_the_jump_slot_once(client: Client,
                                                                clock: Clock) -> None:
    clock.now = utc("2024-03-30 22:00")
    define(client, "30 2 * * *", tz="Europe/Paris")
    # Nobody looks from 23:00 CET to 05:00 CEST: the 02:30 slot (at the jump) was missed.
    clock.now = utc("2024-03-31 03:00")
    CronStore(client).create_due()
    clock.now = utc("2024-03-31 03:00") + 5
    CronStore(client).create_due()
    [put] = slot_jobs(client)
    assert (slot_of(put.jid), put.state) == (utc("2024-03-31 01:00"), "waiting")
    tick_until(client, clock, utc("2024-04-01 01:00"), step=30)
    assert runs(client) == [utc("2024-03-31 01:00"), utc("2024-04-01 00:30")]


def test_writers_with_clocks_apart_never_go_back(client: Client, clock: Clock) -> None:
    define(client, "* * * * *", catch_up="5")
    ahead = Client(client.redis, clock=lambda: MIDNIGHT + 600)
    CronStore(ahead).create_due()
    handled = CronStore(client).read_all()[0].last
    # A writer whose clock is ten minutes behind puts nothing and moves nothing back.
    assert CronStore(client).create_due() == []
    assert CronStore(client).read_all()[0].last == handled
