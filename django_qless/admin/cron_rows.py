"""The cron schedules of the recurring page: each with its last run and next runs in two zones."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass

from django.utils import timezone

from ..core import Client
from ..core.crons import CronStore, StoredCron
from .recurring_runs import LastRun, cron_last_runs

#: Next runs shown per schedule.
NEXT_RUNS = 5


@dataclass(frozen=True)
class NextRun:
    """One run: when, in the schedule's zone and in the admin user's."""

    at: dt.datetime
    in_zone: str
    for_user: str


@dataclass(frozen=True)
class CronRow:
    """One synced cron schedule, as the recurring page shows it."""

    stored: StoredCron
    runs: tuple[NextRun, ...]
    user_zone: str
    #: Its latest slot job due by now (None when none is remembered).
    last_run: LastRun | None = None


def shown(moment: dt.datetime) -> str:
    """`2024-03-31 03:00 CEST` (zone abbreviation of that instant)."""
    return moment.strftime("%Y-%m-%d %H:%M %Z")


def cron_rows(client: Client) -> list[CronRow]:
    """Every cron schedule of the connection, with its last run and next `NEXT_RUNS` runs."""
    user = timezone.get_current_timezone()
    now = client.now()
    schedules = CronStore(client).read_all()
    last = cron_last_runs(client, [stored.name for stored in schedules], now)
    rows = []
    for stored in schedules:
        definition = stored.definition
        zone = zoneinfo.ZoneInfo(definition.tz)
        runs = tuple(
            NextRun(moment, shown(moment.astimezone(zone)), shown(moment.astimezone(user)))
            for moment in (dt.datetime.fromtimestamp(t, dt.timezone.utc)
                           for t in definition.next_runs(now, NEXT_RUNS))
        )
        rows.append(CronRow(stored, runs, str(user), last.get(stored.name)))
    return rows
