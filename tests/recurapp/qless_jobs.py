"""Recurring schedules declared in code; `QLESS["RECURRING"]` in the tests adds `vacuum`."""

from __future__ import annotations

from datetime import timedelta

from django_qless import qless_job
from django_qless.schedules import Schedule, every

#: What the jobs below did, for the tests to inspect.
CALLS: list[tuple[str, object]] = []


@qless_job(name="recurapp.nightly_cleanup", queue="maintenance",
           recur=every(days=1, at="03:00", tz="UTC"))
def nightly_cleanup() -> None:
    """Runs every day at 03:00 UTC."""
    CALLS.append(("nightly_cleanup", None))


@qless_job(
    name="recurapp.poll_feed", queue="feeds", priority=5, tags=["feeds"], retries=2,
    recur=Schedule(every(minutes=5), kwargs={"source": "main"}, backlog=2),
)
def poll_feed(source: str) -> str:
    """Runs every five minutes with fixed keyword arguments; at most 3 catch-up runs."""
    CALLS.append(("poll_feed", source))
    return source


@qless_job(
    name="recurapp.regional_report", queue="reports",
    recur=[
        Schedule(every(hours=1), name="report-eu", kwargs={"region": "eu"}),
        Schedule(every(hours=1, offset=timedelta(minutes=30)), name="report-us",
                 args=["us"], backlog=None),
    ],
)
def regional_report(region: str) -> str:
    """Two named schedules of one job: on the hour for eu, at half past for us."""
    CALLS.append(("regional_report", region))
    return region


@qless_job(name="recurapp.vacuum", queue="maintenance")
def vacuum(table: str) -> None:
    """No schedule in code: tests schedule it from QLESS["RECURRING"]."""
    CALLS.append(("vacuum", table))
