"""Sentry Crons check-ins for the jobs of declared recurring schedules (opt-in).

A job belongs to a schedule when its jid says so: qless spawns an interval schedule's
jobs as `<template jid>-<n>` (the template jid is `schedules.schedule_jid(name)`), and a
cron schedule's slot jobs are `cron-<name hash>-<slot>-<digest>`. Its schedule is found
among the schedules declared in code and in `QLESS["RECURRING"]`, whose name is the
monitor's slug. A job of "Run now" is no scheduled run: it sends no check-in.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sentry_sdk.crons import MonitorStatus, capture_checkin
from sentry_sdk.utils import capture_internal_exceptions

from ...core.crons import jid_stem
from ...core.hooks import JobRun
from ...core.late_slots import slot_ref
from ...cron import ALIASES

if TYPE_CHECKING:
    from sentry_sdk._types import MonitorConfig, MonitorConfigScheduleUnit

    from ...recurring.declarations import Declared

#: Sentry's interval units, largest first, in seconds.
UNITS: tuple[tuple[MonitorConfigScheduleUnit, int], ...] = (
    ("week", 604_800), ("day", 86_400), ("hour", 3_600), ("minute", 60))
#: A job spawned by a qless recurring template: `<template jid>-<count>`.
SPAWNED = re.compile(r"(recur-[0-9a-f]{16})-[0-9]+", re.ASCII)


@dataclass(frozen=True)
class CronOptions:
    """Whether schedules send check-ins, and those that never do (names or patterns)."""

    monitor: bool = False
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for rule in self.exclude:
            re.compile(rule)  # a bad pattern fails `sentry_sdk.init`, not every job's hook

    def excludes(self, name: str) -> bool:
        """Whether `exclude` names this schedule (exactly, or by a full regex match)."""
        return any(name == rule or re.fullmatch(rule, name) for rule in self.exclude)


@dataclass(frozen=True)
class Monitor:
    """The Crons monitor of one schedule: its slug and the schedule Sentry is told of."""

    slug: str
    config: MonitorConfig | None


@contextmanager
def checked_in(run: JobRun, options: CronOptions) -> Iterator[None]:
    """In progress before the job, then ok or error with its duration (a monitored job)."""
    monitor = None
    if options.monitor:
        with capture_internal_exceptions():  # a schedule unread is no reason to skip the job
            monitor = monitor_of(run)
    if monitor is None or options.excludes(monitor.slug):
        yield
        return
    check_in = capture_checkin(monitor_slug=monitor.slug, monitor_config=monitor.config,
                               status=MonitorStatus.IN_PROGRESS)
    started = time.monotonic()
    status = MonitorStatus.ERROR
    try:
        yield
        status = MonitorStatus.OK
    finally:
        capture_checkin(monitor_slug=monitor.slug, check_in_id=check_in, status=status,
                        duration=time.monotonic() - started, monitor_config=monitor.config)


def monitor_of(run: JobRun) -> Monitor | None:
    """The monitor of the schedule a job was put by, or None for any other job."""
    stem = schedule_stem(run.jid)
    if stem is None:
        return None
    # Imported here: the declarations need Django, this module is imported in settings.
    from ...recurring.declarations import collect  # noqa: PLC0415

    for declared in collect().items:
        if stem in (declared.jid, _cron_stem(declared)):
            return Monitor(declared.name, monitor_config(declared))
    return None


def schedule_stem(jid: str) -> str | None:
    """The schedule part of a scheduled job's jid (None for any other jid)."""
    spawned = SPAWNED.fullmatch(jid)
    if spawned is not None:
        return spawned[1]
    slot = slot_ref(jid) if jid.startswith("cron-") else None
    return None if slot is None else slot.stem


def _cron_stem(declared: Declared) -> str | None:
    """The jid stem of a cron schedule's slot jobs (None for an interval schedule)."""
    return None if declared.cron is None else jid_stem(declared.name)


def monitor_config(declared: Declared) -> MonitorConfig | None:
    """The schedule as Sentry reads it; None when Sentry cannot express it."""
    cron = declared.cron
    if cron is not None:
        expression = ALIASES.get(cron.expression.strip().lower(), cron.expression)
        return {"schedule": {"type": "crontab", "value": expression}, "timezone": cron.tz}
    seconds = declared.interval.interval
    for unit, size in UNITS:
        if seconds % size == 0:
            return {"schedule": {"type": "interval", "value": seconds // size, "unit": unit}}
    return None  # under a minute, or not whole minutes: Sentry's intervals are coarser
