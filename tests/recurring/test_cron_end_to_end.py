"""Cron schedules end to end: declared in settings and on a job, synced, run by several
workers on one moving clock across both daylight saving changes, downtime and a prune."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from django_qless import qless_job
from django_qless.core import Client
from django_qless.core.crons import jid_stem
from django_qless.recurring import sync_schedules
from django_qless.schedules import cron
from django_qless.worker import Worker, WorkerOptions
from tests.recurring.conftest import Clock
from tests.recurring.cron_helpers import utc

WORKERS = 3
STEP = 45.0


def half_hourly() -> None:
    """Declared on the job, in the test (so only this module schedules it)."""


@pytest.fixture(autouse=True)
def database_reachable(django_db_blocker: Any) -> Iterator[None]:
    """The worker closes Django connections around each job."""
    with django_db_blocker.unblock():
        yield


def declare(settings: Any, *, with_paris: bool = True) -> None:
    """Two schedules in settings (one of them optional, to prune it)."""
    recurring: dict[str, Any] = {
        "ny-night": {"JOB": "recurapp.vacuum", "CRON": "30 1 * * *", "TZ": "America/New_York",
                     "CATCH_UP": "2", "ARGS": ["ny"], "QUEUE": "cron"},
    }
    if with_paris:
        recurring["paris-night"] = {"JOB": "recurapp.vacuum", "CRON": "30 2 * * *",
                                    "TZ": "Europe/Paris", "ARGS": ["paris"], "QUEUE": "cron"}
    settings.QLESS = {**settings.QLESS, "RECURRING": recurring}


def run_until(workers: list[Worker], clock: Clock, end: float) -> None:
    """Every worker takes its turn each STEP seconds of the clock, until `end`."""
    while clock.now < end:
        for worker in workers:
            while worker.run_once():
                pass
        clock.advance(STEP)


def slot_runs(client: Client, name: str) -> list[tuple[int, int, str]]:
    """(slot, popped at, state) of every job of schedule `name`, by slot."""
    keys = [k.decode() if isinstance(k, bytes) else k
            for k in client.redis.scan_iter(f"ql:j:{jid_stem(name)}-*")]
    jids = [k.removeprefix("ql:j:") for k in keys if k.count("-") == 3]
    found = []
    for job in client.get_jobs(jids):
        popped = [h.when for h in job.history if h.what == "popped"]
        found.append((int(job.jid.split("-")[2]), popped[0] if popped else -1, job.state))
    return sorted(found)


@pytest.mark.usefixtures("clean_registry")
@pytest.mark.slow
def test_declared_synced_run_across_dst_downtime_and_prune(
    settings: Any, client: Client, clock: Clock
) -> None:
    qless_job(name="e2e.half_hourly", queue="cron",
              recur=cron("0,30 2 * * *", tz="Europe/Paris", catch_up="skip"))(half_hourly)
    declare(settings)
    client.config.set("jobs-history", 30 * 86400)  # keep every completed job to count it
    clock.now = utc("2024-10-26 20:00")
    sync_schedules(clients={"default": client}).raise_for_errors()
    workers = [Worker(WorkerOptions(queues=("cron",), handle_signals=False), client=client)
               for _ in range(WORKERS)]
    # The fall-back night in Paris (2024-10-27).
    run_until(workers, clock, utc("2024-10-27 12:00"))
    # Down until 09:00 UTC on the 28th: that night's slots are missed.
    clock.now = utc("2024-10-28 09:00")
    run_until(workers, clock, utc("2024-10-28 09:05"))
    declare(settings, with_paris=False)
    sync_schedules(clients={"default": client}, prune=True).raise_for_errors()
    # Down again until the New York fall-back night (2024-11-03), and through it.
    clock.now = utc("2024-11-02 20:00")
    run_until(workers, clock, utc("2024-11-04 12:00"))

    paris = slot_runs(client, "paris-night")
    assert [slot for slot, _, _ in paris] == [
        utc("2024-10-27 00:30"),  # 02:30 CEST, the first of the two 02:30s
        utc("2024-10-28 01:30"),  # missed in the downtime: "latest" runs it, late
    ]  # then pruned: nothing more
    ny = slot_runs(client, "ny-night")
    assert [slot for slot, _, _ in ny] == [
        utc("2024-10-27 05:30"),
        utc("2024-10-28 05:30"),  # missed, caught up (up to 2)
        utc("2024-11-01 05:30"), utc("2024-11-02 05:30"),  # the latest 2 of 5 missed
        utc("2024-11-03 05:30"),  # 01:30 EDT, not again at 01:30 EST
        utc("2024-11-04 06:30"),  # 01:30 EST
    ]
    half = slot_runs(client, "e2e.half_hourly")
    assert [slot for slot, _, _ in half] == [
        utc("2024-10-27 00:00"), utc("2024-10-27 00:30"),  # 02:00 and 02:30 CEST, once each
        # "skip": nothing of the downtimes
        utc("2024-11-03 01:00"), utc("2024-11-03 01:30"),  # 02:00 and 02:30 CET
        utc("2024-11-04 01:00"), utc("2024-11-04 01:30"),
    ]
    for slot, popped, state in [*paris, *ny, *half]:
        assert state == "complete" and popped >= slot  # once each, never early
