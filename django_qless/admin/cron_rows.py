"""The cron schedules of the recurring page: each with its next runs in two zones."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass

from django.utils import timezone

from ..core import Client
from ..core.crons import CronStore, StoredCron

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


def shown(moment: dt.datetime) -> str:
    """`2024-03-31 03:00 CEST` (zone abbreviation of that instant)."""
    return moment.strftime("%Y-%m-%d %H:%M %Z")


def cron_rows(client: Client) -> list[CronRow]:
    """Every cron schedule of the connection, with its next `NEXT_RUNS` runs."""
    user = timezone.get_current_timezone()
    now = client.now()
    rows = []
    for stored in CronStore(client).read_all():
        definition = stored.definition
        zone = zoneinfo.ZoneInfo(definition.tz)
        runs = tuple(
            NextRun(moment, shown(moment.astimezone(zone)), shown(moment.astimezone(user)))
            for moment in (dt.datetime.fromtimestamp(t, dt.timezone.utc)
                           for t in definition.next_runs(now, NEXT_RUNS))
        )
        rows.append(CronRow(stored, runs, str(user)))
    return rows
