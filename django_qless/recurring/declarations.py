"""Collect the declared schedules (`@qless_job(recur=...)`, `QLESS["RECURRING"]`) and resolve them.

Resolving fills in what each template will hold (klass, queue, connection, priority, tags,
retries, backlog, JSON data) the way `.enqueue()` would, so a schedule that could not be
enqueued is reported here, before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..conf import Problem, QlessSettings, get_settings
from ..core import validation
from ..exceptions import QlessError
from ..job_spec import JobSpec
from ..registry import Registry, registry
from ..schedules import (
    DEFAULT_BACKLOG,
    MANAGED_TAG,
    Cron,
    Every,
    Schedule,
    Timing,
    as_every,
    cron,
    every,
    schedule_jid,
)

#: Keys of a `QLESS["RECURRING"]` entry.
SETTING_KEYS = (
    "JOB", "EVERY", "CRON", "AT", "TZ", "OFFSET", "ANCHOR", "CATCH_UP", "QUEUE", "PRIORITY",
    "TAGS", "RETRIES", "BACKLOG", "ARGS", "KWARGS", "CONNECTION",
)
TIMING_KEYS = ("AT", "TZ", "OFFSET", "ANCHOR")
#: Keys that only make sense next to CRON (and those that only make sense next to EVERY).
CRON_KEYS = ("TZ", "CATCH_UP")
INTERVAL_ONLY_KEYS = ("AT", "OFFSET", "ANCHOR", "BACKLOG")
#: qless's own retries default, used when neither the job nor the schedule sets one.
DEFAULT_RETRIES = 5


@dataclass(frozen=True)
class Declared:
    """A schedule resolved to the recurring template it should be in Redis."""

    name: str
    jid: str
    klass: str
    queue: str
    connection: str
    every: Timing
    priority: float
    tags: tuple[str, ...]
    retries: int
    #: As qless stores it: 0 spawns every missed run, n > 0 at most n + 1 after downtime.
    backlog: int
    data: Mapping[str, Any]
    encoded: str
    source: str

    @property
    def cron(self) -> Cron | None:
        """The cron timing, or None for an interval schedule."""
        return self.every if isinstance(self.every, Cron) else None

    @property
    def interval(self) -> Every:
        """The interval timing (only for schedules that are not cron ones)."""
        if not isinstance(self.every, Every):
            raise TypeError(f"schedule {self.name!r} is a cron schedule, not an interval")
        return self.every


@dataclass(frozen=True)
class Declarations:
    """Every resolved schedule (sorted by name) and what is wrong with the others."""

    items: tuple[Declared, ...]
    problems: tuple[Problem, ...]


def collect(settings: QlessSettings | None = None, jobs: Registry | None = None) -> Declarations:
    """Resolve the schedules of every registered job and of `QLESS["RECURRING"]`."""
    settings = settings or get_settings()
    jobs = jobs or registry
    found: list[Declared] = []
    problems: list[Problem] = []
    for defn in jobs.all():
        for schedule in defn.recur:
            where = f"@qless_job {defn.name}"
            _add(found, problems, defn, schedule, settings, where)
    for name, entry in settings.recurring.items():
        where = f"QLESS['RECURRING'][{name!r}]"
        try:
            klass, schedule = from_setting(name, entry)
        except ValueError as exc:
            problems.append(Problem("django_qless.E020", where, str(exc)))
            continue
        target = jobs.lookup(klass)
        if target is not None:
            _add(found, problems, target, schedule, settings, where)
        elif not _add_task(found, problems, klass, schedule, settings, where):
            problems.append(Problem(
                "django_qless.E021", f"{where}['JOB']",
                f"names {klass!r}, which is not a registered job (decorated with "
                "@qless_job in a qless_jobs.py of an installed app) nor a Django task "
                "(@task) of an installed app",
            ))
    problems += _duplicates(found)
    return Declarations(tuple(sorted(found, key=lambda d: d.name)), tuple(problems))


def _add(
    found: list[Declared], problems: list[Problem], defn: JobSpec[Any, Any],
    schedule: Schedule, settings: QlessSettings, where: str,
) -> None:
    """Resolve one schedule into `found`, or record why it cannot be."""
    try:
        found.append(resolve(defn, schedule, settings, where))
    except (QlessError, TypeError, ValueError) as exc:
        problems.append(Problem("django_qless.E023", where, f"cannot be scheduled: {exc}"))


def _add_task(
    found: list[Declared], problems: list[Problem], path: str, schedule: Schedule,
    settings: QlessSettings, where: str,
) -> bool:
    """Resolve the schedule of the Django task at `path` into `found`, or record why it
    cannot be; False when there is no such task (or no Django Tasks at all)."""
    try:  # Django Tasks is optional (Django 6, or the django-tasks backport on 5.2)
        from ..tasks.exceptions import NotQlessBackendError  # noqa: PLC0415
        from ..tasks.schedule import find_task, resolve_task_schedule  # noqa: PLC0415
    except ImportError:
        return False
    task = find_task(path)
    if task is None:
        return False
    try:
        found.append(resolve_task_schedule(task, schedule, settings, where))
    except NotQlessBackendError as exc:
        problems.append(Problem("django_qless.E024", f"{where}['JOB']", str(exc)))
    except (QlessError, TypeError, ValueError) as exc:
        problems.append(Problem("django_qless.E023", where, f"cannot be scheduled: {exc}"))
    return True


def resolve(
    defn: JobSpec[Any, Any], schedule: Schedule, settings: QlessSettings, where: str
) -> Declared:
    """The template for `schedule` of job `defn` (the job's options fill the gaps)."""
    name = validation.label(schedule.name or defn.name, "schedule name")
    variant = defn.using(
        queue=schedule.queue, priority=schedule.priority, tags=schedule.tags,
        retries=schedule.retries, connection=schedule.connection,
    )
    # The same checks as .enqueue(): arguments fit the function, JSON, size, connection.
    connection, submission = variant.prepare(settings, schedule.args, schedule.kwargs)
    options = submission.options
    return Declared(
        name=name,
        jid=schedule_jid(name),
        klass=defn.name,
        queue=submission.queue,
        connection=connection,
        every=schedule.every,
        priority=options.priority or 0,
        tags=tuple(dict.fromkeys([*(options.tags or ()), MANAGED_TAG])),
        retries=DEFAULT_RETRIES if options.retries is None else options.retries,
        backlog=schedule.backlog or 0,
        data=json.loads(submission.data),
        encoded=submission.data,
        source=where,
    )


def from_setting(name: str, entry: object) -> tuple[str, Schedule]:
    """The job klass and `Schedule` of one `QLESS["RECURRING"]` entry."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"must be a dict with JOB and EVERY (or CRON), got {entry!r}")
    unknown = sorted(str(key) for key in entry if key not in SETTING_KEYS)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)}; expected some of {SETTING_KEYS}")
    if "EVERY" in entry and "CRON" in entry:
        raise ValueError("give EVERY or CRON, not both")
    missing = [key for key in ("JOB", "EVERY") if key not in entry
               and not (key == "EVERY" and "CRON" in entry)]
    if missing:
        raise ValueError(f"needs {' and '.join(missing)}" + (
            " (or CRON)" if "EVERY" in missing else ""))
    klass = _task_path(entry["JOB"]) or entry["JOB"]
    if not isinstance(klass, str) or not klass:
        raise ValueError(f"JOB must be a job name (klass), a Django task or its dotted path, "
                         f"got {klass!r}")
    schedule = Schedule(
        timing(entry),
        name=name,
        args=entry.get("ARGS", ()),
        kwargs=entry.get("KWARGS", {}),
        queue=entry.get("QUEUE"),
        priority=entry.get("PRIORITY"),
        tags=entry.get("TAGS"),
        retries=entry.get("RETRIES"),
        backlog=entry.get("BACKLOG", DEFAULT_BACKLOG),
        connection=entry.get("CONNECTION"),
    )
    return klass, schedule


def _task_path(value: object) -> str | None:
    """The dotted path of a Django `Task` given as JOB; None for anything else."""
    if isinstance(value, str):
        return None
    try:
        from ..tasks.schedule import task_path  # noqa: PLC0415 - Django Tasks is optional
    except ImportError:
        return None
    return task_path(value)


def timing(entry: Mapping[str, Any]) -> Timing:
    """EVERY (an `every(...)`, a `cron(...)`, a timedelta or seconds) with the optional
    AT/TZ/OFFSET/ANCHOR, or CRON (an expression) with the optional TZ/CATCH_UP."""
    if "CRON" in entry:
        return cron_timing(entry)
    value = entry["EVERY"]
    if isinstance(value, Cron):
        extra = [key for key in (*TIMING_KEYS, "CATCH_UP", "BACKLOG") if key in entry]
        if extra:
            raise ValueError(f"give {', '.join(extra)} inside cron(...), not next to it")
        return value
    if "CATCH_UP" in entry:
        raise ValueError("CATCH_UP goes with CRON; an EVERY schedule catches up per BACKLOG")
    extra = [key for key in TIMING_KEYS if key in entry]
    if isinstance(value, Every):
        if extra:
            raise ValueError(f"give {', '.join(extra)} inside every(...), not next to it")
        return value
    if not extra:
        return as_every(value)
    return every(
        seconds=as_every(value).interval, at=entry.get("AT"), tz=entry.get("TZ", "UTC"),
        offset=entry.get("OFFSET", 0), anchor=entry.get("ANCHOR"),
    )


def cron_timing(entry: Mapping[str, Any]) -> Cron:
    """CRON (an expression, or a `cron(...)`) with the optional TZ and CATCH_UP."""
    value = entry["CRON"]
    wrong = [key for key in INTERVAL_ONLY_KEYS if key in entry]
    if wrong:
        raise ValueError(f"{', '.join(wrong)} go(es) with EVERY; a CRON schedule takes "
                         "TZ and CATCH_UP")
    if isinstance(value, Cron):
        extra = [key for key in CRON_KEYS if key in entry]
        if extra:
            raise ValueError(f"give {', '.join(extra)} inside cron(...), not next to it")
        return value
    return cron(value, tz=entry.get("TZ", "UTC"), catch_up=entry.get("CATCH_UP", "latest"))


def _duplicates(found: list[Declared]) -> list[Problem]:
    """Two schedules with the same name (hence the same jid) cannot both exist."""
    seen: dict[str, Declared] = {}
    problems = []
    for declared in found:
        other = seen.setdefault(declared.jid, declared)
        if other is not declared:
            problems.append(Problem(
                "django_qless.E022", declared.source,
                f"declares schedule {declared.name!r}, already declared by {other.source}; "
                "give one of them another name (Schedule(name=...) or another RECURRING key)",
            ))
    return problems
