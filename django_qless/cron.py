"""Cron expressions and the slots they give in a time zone, daylight saving included.

Five fields (minute, hour, day of month, month, day of week) with `*`, lists, ranges,
steps and English names (`JAN`, `MON`), plus the aliases `@yearly`, `@annually`,
`@monthly`, `@weekly`, `@daily`, `@midnight` and `@hourly`. As in Vixie cron (the cron of
Debian and most Linux systems), when both the day of month and the day of week are
restricted a day matches if either does, and day of week 7 is Sunday too.

A slot is a wall-clock time the expression names in its zone, and the instant it runs:

- a wall time that does not exist (the hour skipped when clocks go forward) runs once, at
  the first valid time after it, i.e. the instant the clocks jumped; several such slots
  become one;
- a wall time that happens twice (the hour repeated when clocks go back) runs once, at its
  first occurrence. So `*/15 2 * * *` runs four times on the fall-back day in
  Europe/Paris, in the first pass through 02:00-02:59, not eight: a schedule that must
  fire every 15 minutes of real time is an interval, not a cron expression.

Standard library only (`zoneinfo`), importable without Django.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass

UTC = dt.timezone.utc  # the UTC alias of datetime came in Python 3.11

#: (name, lowest, highest) of the five fields, in order.
FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12),
          ("day of week", 0, 7))
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
ALIASES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
#: How far ahead a match is looked for: covers February 29 (every 4 years; 8 across 2100).
HORIZON_DAYS = 366 * 8 + 2


class CronError(ValueError):
    """A cron expression or zone that cannot be used; the message says which part and why."""


def is_number(text: str) -> bool:
    """Whether `text` is a whole number written with the ASCII digits 0-9 only.

    `str.isdigit()` also accepts other scripts' digits (Arabic-Indic, full-width) and
    superscripts, which `int()` reads or refuses with a bare ValueError: cron takes neither.
    """
    return text.isascii() and text.isdigit()


def parse_field(text: str, index: int) -> frozenset[int]:
    """The values one field allows (day of week 7 folded into 0)."""
    name, low, high = FIELDS[index]
    names = MONTHS if index == 3 else WEEKDAYS if index == 4 else ()
    values: set[int] = set()
    for part in text.split(","):
        values |= parse_part(part, name, low, high, names, base=1 if index == 3 else 0)
    if index == 4 and 7 in values:
        values = (values - {7}) | {0}
    return frozenset(values)


def parse_part(part: str, name: str, low: int, high: int, names: tuple[str, ...],
               base: int) -> set[int]:
    """One comma-separated part: `*`, `N`, `A-B`, each optionally `/STEP`."""
    span, slash, step_text = part.partition("/")
    step = 1
    if slash:
        if not is_number(step_text) or int(step_text) == 0:
            raise CronError(f"{name}: step in {part!r} must be a whole number above 0")
        step = int(step_text)
    if span == "*":
        first, last = low, high
    else:
        start_text, dash, end_text = span.partition("-")
        first = value_of(start_text, name, low, high, names, base)
        # "5/15" means from 5 to the end, every 15, as in most crons.
        last = value_of(end_text, name, low, high, names, base) if dash else (
            high if slash else first)
        if last < first:
            raise CronError(f"{name}: range {part!r} runs backwards")
    return set(range(first, last + 1, step))


def value_of(text: str, name: str, low: int, high: int, names: tuple[str, ...],
             base: int) -> int:
    """A number or an English name within the field's bounds."""
    upper = text.upper()
    if upper in names:
        return names.index(upper) + base
    if not is_number(text):
        raise CronError(f"{name}: {text!r} is not a number" + (
            f" nor one of {', '.join(names)}" if names else ""))
    value = int(text)
    if not low <= value <= high:
        raise CronError(f"{name}: {value} is outside {low}-{high}")
    return value


def zone(name: str) -> zoneinfo.ZoneInfo:
    """An IANA zone this system knows."""
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
        raise CronError(f"{name!r} is not a known time zone") from None


@dataclass(frozen=True)
class Slot:
    """One run: the wall time the expression named, and the instant it runs (UTC)."""

    wall: dt.datetime
    at: dt.datetime


@dataclass(frozen=True)
class CronExpression:
    """A parsed five-field expression (the text is kept as written, aliases expanded)."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    #: Whether the day-of-month and day-of-week fields start with `*` (Vixie's OR rule).
    any_day: bool
    any_weekday: bool

    @classmethod
    def parse(cls, text: str) -> CronExpression:
        """Parse an expression; `CronError` names the field at fault."""
        if not isinstance(text, str):
            raise CronError(f"a cron expression must be a string, got {text!r}")
        expanded = ALIASES.get(text.strip().lower(), text.strip())
        if expanded.startswith("@"):
            raise CronError(f"unknown alias {text!r}; known: {', '.join(ALIASES)}")
        parts = expanded.split()
        if len(parts) != 5:
            raise CronError(f"{text!r} has {len(parts)} fields; a cron expression has five: "
                            "minute hour day-of-month month day-of-week")
        minutes, hours, days, months, weekdays = (
            parse_field(part, index) for index, part in enumerate(parts)
        )
        expression = cls(" ".join(parts), minutes, hours, days, months, weekdays,
                         any_day=parts[2].startswith("*"), any_weekday=parts[4].startswith("*"))
        if not any(expression.day_matches(day) for day in days_from(dt.date(2024, 1, 1))):
            raise CronError(f"{text!r} names no day that exists")
        return expression

    def day_matches(self, day: dt.date) -> bool:
        """Whether the expression runs on this calendar day."""
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = day.isoweekday() % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week

    def walls_from(self, start: dt.datetime) -> Iterator[dt.datetime]:
        """The wall times it names at or after a naive `start`, in order."""
        hours, minutes = sorted(self.hours), sorted(self.minutes)
        for day in days_from(start.date()):
            if not self.day_matches(day):
                continue
            for hour in hours:
                for minute in minutes:
                    wall = dt.datetime.combine(day, dt.time(hour, minute))
                    if wall >= start:
                        yield wall

    def slots(self, tz: str, after: dt.datetime) -> Iterator[Slot]:
        """The slots that run strictly after the aware instant `after`, in order."""
        zone_info = zone(tz)
        # An hour early: after a repeated hour the wall clock reads earlier than before it.
        local = after.astimezone(zone_info).replace(tzinfo=None) - dt.timedelta(hours=1)
        last: dt.datetime | None = None
        for wall in self.walls_from(local.replace(second=0, microsecond=0)):
            at = instant(wall, zone_info)
            if at <= after or at == last:
                continue
            last = at
            yield Slot(wall, at)

    def next_slots(self, tz: str, after: dt.datetime, count: int) -> list[Slot]:
        """The next `count` slots after `after`."""
        found = []
        for slot in self.slots(tz, after):
            found.append(slot)
            if len(found) == count:
                break
        return found

    def next_times(self, tz: str, after: float, count: int) -> list[float]:
        """The next `count` slot instants strictly after `after` (seconds since the epoch)."""
        start = dt.datetime.fromtimestamp(after, UTC)
        return [slot.at.timestamp() for slot in self.next_slots(tz, start, count)]


def days_from(start: dt.date) -> Iterator[dt.date]:
    """Calendar days from `start`, for `HORIZON_DAYS`."""
    for offset in range(HORIZON_DAYS):
        yield start + dt.timedelta(days=offset)


def instant(wall: dt.datetime, zone_info: zoneinfo.ZoneInfo) -> dt.datetime:
    """When a wall time happens (UTC): its first occurrence, or for a time the clocks
    skipped, the instant they jumped (the first valid time after it)."""
    first = wall.replace(tzinfo=zone_info, fold=0).astimezone(UTC)
    if first.astimezone(zone_info).replace(tzinfo=None) == wall:
        return first
    # In a gap, fold=0 reads the wall time with the offset before the jump and fold=1
    # with the one after; the jump lies between the two instants. Find it to the second.
    low = wall.replace(tzinfo=zone_info, fold=1).astimezone(UTC)
    high = first
    if low > high:
        low, high = high, low
    while (high - low) > dt.timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone_info).replace(tzinfo=None) >= wall:
            high = middle
        else:
            low = middle
    return high.replace(microsecond=0)
