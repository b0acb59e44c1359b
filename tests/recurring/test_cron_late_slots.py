"""A cron slot job put ahead of its slot just before the workers stop is judged by the
schedule's catch-up policy when they come back: a stop of 6 minutes, on a faked clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from django_qless.core import Client
from django_qless.core.crons import CronStore
from django_qless.core.late_slots import SKIPPED, LateSlots, slot_ref, too_late
from django_qless.worker import Worker, WorkerOptions
from tests.recurapp.qless_jobs import CALLS
from tests.recurring.conftest import MIDNIGHT, Clock
from tests.recurring.cron_helpers import QUEUE, define, slot_jobs, slot_of

MINUTE = 60


@pytest.fixture(autouse=True)
def database_reachable(django_db_blocker: Any) -> Iterator[None]:
    """The worker closes Django connections around each job."""
    with django_db_blocker.unblock():
        yield


def work(worker: Worker) -> None:
    """One look at the cron index, then every job that can run now."""
    while worker.run_once():
        pass


def skipped_reason(client: Client, jid: str) -> str | None:
    """The reason of the job's `skipped` history entry, if it has one."""
    job = client.get_job(jid)
    assert job is not None
    entries = [h.extra.get("reason") for h in job.history if h.what == SKIPPED]
    return str(entries[0]) if entries else None


@pytest.mark.parametrize(("policy", "missed_run"), [
    ("skip", []), ("latest", [9]), ("2", [8, 9]),
])
def test_a_six_minute_stop_runs_what_the_policy_says(
    client: Client, clock: Clock, policy: str, missed_run: list[int]
) -> None:
    define(client, "* * * * *", catch_up=policy)
    client.config.set("jobs-history", 86400)  # keep the completed jobs to read them
    worker = Worker(WorkerOptions(queues=(QUEUE,), handle_signals=False), client=client)
    CALLS.clear()
    while clock.now < MIDNIGHT + 4 * MINUTE + 15:  # 00:01 to 00:04 run on time
        work(worker)
        clock.advance(15)
    work(worker)  # at 00:04:15 the 00:05 slot is put ahead; then the workers stop
    assert CALLS == [("vacuum", "t")] * 4
    assert [slot_of(p.jid) for p in slot_jobs(client) if p.state == "scheduled"] == [
        MIDNIGHT + 5 * MINUTE]
    clock.advance(6 * MINUTE)  # back at 00:10:15
    CALLS.clear()
    work(worker)

    jobs = {slot_of(p.jid): p for p in slot_jobs(client)}
    ran = sorted((slot - MIDNIGHT) // MINUTE for slot, p in jobs.items()
                 if slot > MIDNIGHT + 4 * MINUTE and p.state == "complete"
                 and skipped_reason(client, p.jid) is None)
    # 00:05 (put ahead, 5 min 15 s late) to 00:09 were missed; 00:10, 15 s late, runs anyway.
    assert ran == [*missed_run, 10]
    assert len(CALLS) == len(missed_run) + 1
    ahead = jobs[MIDNIGHT + 5 * MINUTE]
    assert ahead.state == "complete"
    reason = skipped_reason(client, ahead.jid)
    assert reason is not None
    assert "2023-11-15 00:05:00 UTC" in reason
    assert "5 min 15 s late" in reason
    assert worker.outcomes["skipped"] == 1


def test_the_put_ahead_slot_runs_when_it_is_the_newest_missed(client: Client,
                                                              clock: Clock) -> None:
    define(client, "0 * * * *", catch_up="latest")
    clock.now = MIDNIGHT + 3600 - 45
    CronStore(client).create_due()  # 01:00 put ahead; then a stop until 01:06
    clock.now = MIDNIGHT + 3600 + 6 * MINUTE
    worker = Worker(WorkerOptions(queues=(QUEUE,), handle_signals=False), client=client)
    CALLS.clear()
    work(worker)
    assert CALLS == [("vacuum", "t")]
    assert worker.outcomes["skipped"] == 0


def test_a_retry_of_a_slot_job_is_not_judged(client: Client, clock: Clock) -> None:
    define(client, "0 * * * *", catch_up="skip")
    clock.now = MIDNIGHT + 3600
    CronStore(client).create_due()
    [job] = client.queue(QUEUE).pop()
    judge = LateSlots(client)
    assert judge.reason(job) is None  # on time
    job.retry(delay=10 * MINUTE)
    clock.advance(10 * MINUTE + 1)
    [again] = client.queue(QUEUE).pop()
    assert again.jid == job.jid
    assert judge.reason(again) is None  # late, but its first attempt started on time


def test_only_slot_jids_are_judged() -> None:
    assert slot_ref("cron-0123456789abcdef-1700000060-89abcdef") is not None
    assert slot_ref("cron-0123456789abcdef-now-4f2a9c") is None
    assert slot_ref("recur-0123456789abcdef") is None
    assert slot_ref("cron-0123456789abcdef-\u0661700000060-89abcdef") is None


@pytest.mark.parametrize(("policy", "late", "verdict"), [
    ("skip", 60, None), ("skip", 61, "runs no missed slot"),
    ("latest", 119, None), ("latest", 121, "runs only the newest missed slot"),
    ("3", 179, None), ("3", 181, None), ("3", 241, "the 3 newest missed slots"),
])
def test_too_late_counts_newer_missed_slots(client: Client, policy: str, late: int,
                                            verdict: str | None) -> None:
    definition = define(client, "* * * * *", catch_up=policy)
    slot = float(MIDNIGHT + MINUTE)
    reason = too_late(definition, slot, slot + late)
    if verdict is None:
        assert reason is None
    else:
        assert reason is not None and verdict in reason
