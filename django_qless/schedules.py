"""Declared recurrence: `every(...)` timing and `Schedule` options, the `recur=` of a job.

Importable without Django (settings modules use `every(...)` in `QLESS["RECURRING"]`).

qless repeats a template every `interval` seconds from a first run chosen when the
template is written. django_qless fixes that first run to a *phase*: every run time
`t` satisfies `t ≡ phase (mod interval)`, where the phase comes from an anchor:

- default: the Unix epoch (`every(hours=1)` runs on the hour, `every(days=1)` at 00:00 UTC);
- `offset=`: seconds after that anchor (`every(hours=1, offset=timedelta(minutes=15))`);
- `at="03:00", tz="Europe/Paris"`: the next 03:00 wall-clock time in that zone;
- `anchor=<aware datetime>`: any instant (`every(weeks=1, anchor=<a Monday 09:00>)`).

Because the phase does not depend on when or where the sync runs, every host computes
the same next run for a schedule.

`cron("0 9 * * MON-FRI", tz="Europe/Paris")` names wall-clock slots instead (see
`django_qless.cron` for the expression and daylight saving rules); it is accepted wherever
`every(...)` is. Cron schedules are not qless recurring templates: `qless_recur` stores
them under keys of django_qless's own and workers put one job per slot.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from .cron import CronError, CronExpression, is_number, zone

#: Tag carried by every recurring template django_qless manages (and by the jobs it spawns).
MANAGED_TAG = "django_qless:managed"
#: Prefix of the deterministic jid of a declared schedule.
JID_PREFIX = "recur-"
#: Default `backlog`: after downtime, at most two runs (backlog + 1) are spawned.
DEFAULT_BACKLOG = 1

#: ASCII digits only: `\d` alone matches every script's digits.
_AT = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", re.ASCII)

Seconds = float | int | dt.timedelta


def schedule_jid(name: str) -> str:
    """`recur-` + the first 16 hex digits of the SHA-256 of the schedule name (UTF-8)."""
    return JID_PREFIX + hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]


def whole_seconds(value: object, what: str, *, minimum: int) -> int:
    """A number of seconds (int, float or timedelta) that must be whole and >= minimum."""
    if isinstance(value, dt.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a number of seconds or a timedelta, got {value!r}")
    if value != int(value):
        # qless floors spawn times to whole seconds, so fractions would drift.
        raise ValueError(f"{what} must be a whole number of seconds, got {value!r}")
    if value < minimum:
        raise ValueError(f"{what} must be at least {minimum} second(s), got {value!r}")
    return int(value)


def parse_at(value: object) -> dt.time:
    """A wall-clock time from "HH:MM[:SS]" or a naive `datetime.time`."""
    if isinstance(value, dt.time):
        if value.tzinfo is not None:
            raise ValueError("at= must be a naive time; give the zone with tz=")
        if value.microsecond:
            raise ValueError("at= must be a whole second")
        return value
    match = _AT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f'at= must look like "03:00" or "03:00:30", got {value!r}')
    hour, minute, second = (int(part or 0) for part in match.groups())
    try:
        return dt.time(hour, minute, second)
    except ValueError as exc:
        raise ValueError(f"at={value!r}: {exc}") from None


def check_zone(name: object) -> str:
    """An IANA zone name that this system knows."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"tz= must be an IANA zone name such as 'UTC', got {name!r}")
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"tz={name!r} is not a known time zone") from None
    return name


@dataclass(frozen=True)
class Every:
    """A fixed interval (whole seconds) and the anchor its runs line up with."""

    interval: int
    offset: int = 0
    at: dt.time | None = None
    tz: str = "UTC"
    anchor: dt.datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "interval", whole_seconds(self.interval, "interval", minimum=1))
        object.__setattr__(self, "offset", whole_seconds(self.offset, "offset", minimum=0))
        if self.offset >= self.interval:
            raise ValueError(f"offset ({self.offset}s) must be less than the interval "
                             f"({self.interval}s)")
        anchors = [name for name in ("at", "anchor") if getattr(self, name) is not None]
        if self.offset:
            anchors.append("offset")
        if len(anchors) > 1:
            raise ValueError(
                f"give only one of at=, anchor= and offset= (got {', '.join(anchors)})"
            )
        if self.at is not None:
            object.__setattr__(self, "at", parse_at(self.at))
        check_zone(self.tz)
        if self.anchor is not None:
            if not isinstance(self.anchor, dt.datetime) or self.anchor.tzinfo is None:
                raise ValueError(f"anchor= must be a timezone-aware datetime, got {self.anchor!r}")
            if self.anchor.microsecond:
                raise ValueError("anchor= must be a whole second")

    def phase(self, now: float) -> int:
        """Seconds in [0, interval) that every run time is congruent to, modulo the interval."""
        return self._anchor(now) % self.interval

    def next_run(self, now: float) -> int:
        """The first run time at or after `now` (seconds since the epoch)."""
        phase = self.phase(now)
        return phase + math.ceil((now - phase) / self.interval) * self.interval

    def aligned(self, when: float, now: float, tolerance: float = 0.001) -> bool:
        """Whether `when` is one of this schedule's run times."""
        rest = (when - self.phase(now)) % self.interval
        return min(rest, self.interval - rest) <= tolerance

    def _anchor(self, now: float) -> int:
        """The anchor instant, in whole seconds since the epoch."""
        if self.anchor is not None:
            return int(self.anchor.timestamp())
        if self.at is not None:
            return self._next_wall_clock(now)
        return self.offset

    def _next_wall_clock(self, now: float) -> int:
        """The first `at` in zone `tz` at or after `now` (so DST is that of the next run)."""
        zone = zoneinfo.ZoneInfo(self.tz)
        at = self.at or dt.time()
        today = dt.datetime.fromtimestamp(now, zone).date()
        for days in (0, 1):
            candidate = dt.datetime.combine(today + dt.timedelta(days=days), at, zone)
            if candidate.timestamp() >= now:
                return int(candidate.timestamp())
        return int(dt.datetime.combine(today + dt.timedelta(days=2), at, zone).timestamp())

    def describe(self) -> str:
        """Short text such as `every 1d at 03:00 Europe/Paris` or `every 1h +15m`."""
        text = f"every {duration(self.interval)}"
        if self.at is not None:
            spec = "seconds" if self.at.second else "minutes"
            return f"{text} at {self.at.isoformat(timespec=spec)} {self.tz}"
        if self.anchor is not None:
            return f"{text} from {self.anchor.isoformat()}"
        return f"{text} +{duration(self.offset)}" if self.offset else text


def every(
    *,
    seconds: Seconds = 0,
    minutes: float = 0,
    hours: float = 0,
    days: float = 0,
    weeks: float = 0,
    at: str | dt.time | None = None,
    tz: str = "UTC",
    offset: Seconds = 0,
    anchor: dt.datetime | None = None,
) -> Every:
    """An interval with an optional phase: `every(days=1, at="03:00", tz="UTC")`."""
    base = seconds.total_seconds() if isinstance(seconds, dt.timedelta) else seconds
    parts = (base, minutes * 60, hours * 3600, days * 86400, weeks * 604800)
    for part in parts:
        if isinstance(part, bool) or not isinstance(part, int | float):
            raise ValueError(f"every() takes numbers, got {part!r}")
    return Every(
        interval=whole_seconds(sum(parts), "interval", minimum=1),
        offset=whole_seconds(offset, "offset", minimum=0),
        at=parse_at(at) if at is not None else None,
        tz=tz,
        anchor=anchor,
    )


#: What `catch_up=` takes besides a number of slots.
CATCH_UP_WORDS = ("skip", "latest")
CatchUp = Literal["skip", "latest"] | int


def check_catch_up(value: object) -> CatchUp:
    """"skip", "latest", or a whole number N >= 1 of missed slots to run (digits accepted)."""
    if isinstance(value, str) and is_number(value.strip()):
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise CronError(f"catch_up must be 'skip', 'latest' or a number >= 1, got {value!r}")
        return value
    if value == "skip":
        return "skip"
    if value == "latest":
        return "latest"
    raise CronError(f"catch_up must be 'skip', 'latest' or a number >= 1, got {value!r}")


@dataclass(frozen=True)
class Cron:
    """A cron expression read in an IANA zone, and what to do about slots missed."""

    expression: str
    tz: str = "UTC"
    catch_up: CatchUp = "latest"

    def __post_init__(self) -> None:
        parsed = CronExpression.parse(self.expression)
        if not isinstance(self.tz, str) or not self.tz:
            raise CronError(f"tz= must be an IANA zone name such as 'UTC', got {self.tz!r}")
        zone(self.tz)
        object.__setattr__(self, "expression", parsed.text)
        object.__setattr__(self, "catch_up", check_catch_up(self.catch_up))

    @property
    def parsed(self) -> CronExpression:
        """The expression, parsed."""
        return CronExpression.parse(self.expression)

    def next_runs(self, after: float, count: int) -> list[float]:
        """The next `count` run instants strictly after `after` (seconds since the epoch)."""
        return self.parsed.next_times(self.tz, after, count)

    def describe(self) -> str:
        """Short text such as `cron 0 9 * * MON-FRI Europe/Paris`."""
        return f"cron {self.expression} {self.tz}"


def cron(expression: str, *, tz: str = "UTC", catch_up: CatchUp = "latest") -> Cron:
    """Wall-clock slots: `cron("0 9 * * MON-FRI", tz="Europe/Paris", catch_up="latest")`.

    `catch_up` after downtime: "skip" missed slots, run the "latest" once (the default),
    or an int N to run up to the N latest.
    """
    return Cron(expression, tz, catch_up)


Timing = Every | Cron


def as_timing(value: object) -> Timing:
    """A `Cron` as it is, else `as_every(value)`."""
    if isinstance(value, Cron):
        return value
    return as_every(value)


def as_every(value: object) -> Every:
    """An `Every` from an `Every`, a timedelta or a number of seconds."""
    if isinstance(value, Every):
        return value
    if isinstance(value, dt.timedelta | int | float) and not isinstance(value, bool):
        return every(seconds=value)
    raise ValueError(f"a schedule needs every(...), a timedelta or seconds, got {value!r}")


@dataclass(frozen=True)
class Schedule:
    """One declared recurring job: when it runs, and what each spawned job gets.

    `queue`, `priority`, `tags`, `retries` and `connection` default to the job's own;
    `backlog=None` spawns every missed run after downtime, an int caps it (interval
    schedules only: a `cron(...)` says what it catches up with its own `catch_up=`).
    """

    every: Timing
    name: str | None = None
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    queue: str | None = None
    priority: float | None = None
    tags: Sequence[str] | None = None
    retries: int | None = None
    backlog: int | None = DEFAULT_BACKLOG
    connection: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "every", as_timing(self.every))
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise ValueError(f"schedule name must be a non-empty string, got {self.name!r}")
        if isinstance(self.args, str | bytes) or not isinstance(self.args, Sequence):
            raise ValueError(f"args must be a list or tuple, got {self.args!r}")
        if not isinstance(self.kwargs, Mapping):
            raise ValueError(f"kwargs must be a dict, got {self.kwargs!r}")
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "kwargs", MappingProxyType(dict(self.kwargs)))
        if self.tags is not None:
            if isinstance(self.tags, str):
                raise ValueError("tags must be a list of strings, not a string")
            object.__setattr__(self, "tags", tuple(self.tags))
        backlog = self.backlog
        if backlog is not None and (
            isinstance(backlog, bool) or not isinstance(backlog, int) or backlog < 1
        ):
            raise ValueError(
                f"backlog must be an integer >= 1, or None to spawn every missed run; "
                f"got {backlog!r}"
            )


def as_schedules(value: object) -> tuple[Schedule, ...]:
    """Normalise `recur=`: None, a Schedule, a Cron/Every/timedelta/seconds, or a list."""
    if value is None or value == ():
        return ()
    if isinstance(value, Schedule):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(item if isinstance(item, Schedule) else Schedule(as_timing(item))
                     for item in value)
    return (Schedule(as_timing(value)),)


def duration(seconds: int) -> str:
    """`90` -> `1m30s`, `86400` -> `1d`."""
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
