"""The search form's query string as a `JobFilter`, with a clear message for bad input."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from datetime import datetime
from datetime import timezone as dt_timezone

from django.utils import timezone

from ..core import InvalidArgumentError
from .filter_walk import check_filter
from .selection import JobFilter

#: The time bounds and how the form labels them.
BOUNDS = {"since": "From", "until": "To"}


def parse(query: Mapping[str, str]) -> JobFilter:
    """The filter the query names; InvalidArgumentError says which field is wrong."""
    text = {key: query.get(key, "") for key in query if key not in BOUNDS}
    since, until = (parse_time(label, str(query.get(name, ""))) for name, label in BOUNDS.items())
    job_filter = dataclasses.replace(JobFilter.from_query(text), since=since, until=until)
    check_filter(job_filter)
    return job_filter


def parse_time(label: str, raw: str) -> float | None:
    """Epoch seconds from a number or a date and time (local time when it names no zone)."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            raise InvalidArgumentError(
                f"{label} must be a date and time like 2026-01-31T09:30, got {raw[:40]!r}"
            ) from None
        if timezone.is_naive(when):
            when = timezone.make_aware(when)
        return when.timestamp()
    if not math.isfinite(seconds):
        raise InvalidArgumentError(f"{label} must be a date and time, got {raw[:40]!r}")
    return seconds


def local_input(seconds: float | None) -> str:
    """A bound as a datetime-local input's value, in the current time zone."""
    if seconds is None:
        return ""
    when = timezone.localtime(datetime.fromtimestamp(seconds, dt_timezone.utc))
    return when.strftime("%Y-%m-%dT%H:%M" if not when.second else "%Y-%m-%dT%H:%M:%S")
