"""every(), Schedule and the deterministic jid: validation, phase and next-run arithmetic."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import zoneinfo
from typing import Any

import pytest

from django_qless.schedules import (
    MANAGED_TAG,
    Every,
    Schedule,
    as_schedules,
    duration,
    every,
    schedule_jid,
)
from tests.recurring.conftest import MIDNIGHT

UTC = dt.timezone.utc


def ts(*args: int, tz: Any = UTC) -> float:
    """Epoch seconds of a datetime."""
    return dt.datetime(*args, tzinfo=tz).timestamp()  # type: ignore[misc]


def test_jid_is_prefix_plus_sha256_of_the_name() -> None:
    expected = "recur-" + hashlib.sha256(b"report-eu").hexdigest()[:16]
    assert schedule_jid("report-eu") == expected
    assert re.fullmatch(r"recur-[0-9a-f]{16}", schedule_jid("ünïcode name"))
    assert schedule_jid("a") != schedule_jid("b")


def test_managed_tag_is_reserved_name() -> None:
    assert MANAGED_TAG == "django_qless:managed"


@pytest.mark.parametrize(
    ("kwargs", "interval"),
    [
        ({"seconds": 30}, 30),
        ({"minutes": 5}, 300),
        ({"hours": 1, "minutes": 30}, 5400),
        ({"days": 1}, 86400),
        ({"weeks": 1}, 604800),
        ({"seconds": dt.timedelta(minutes=2)}, 120),
        ({"minutes": 0.5}, 30),
    ],
)
def test_every_adds_up_units(kwargs: dict[str, Any], interval: int) -> None:
    assert every(**kwargs).interval == interval


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "interval must be at least 1"),
        ({"seconds": 0}, "interval must be at least 1"),
        ({"seconds": -60}, "interval must be at least 1"),
        ({"seconds": 1.5}, "whole number of seconds"),
        ({"seconds": True}, "every() takes numbers"),
        ({"minutes": 5, "offset": 300}, "offset (300s) must be less than the interval"),
        ({"minutes": 5, "offset": -1}, "offset must be at least 0"),
        ({"days": 1, "at": "25:00"}, "at='25:00'"),
        ({"days": 1, "at": "3am"}, 'at= must look like "03:00"'),
        ({"days": 1, "at": "\u0660\u0663:00"}, 'at= must look like "03:00"'),  # Arabic-Indic
        ({"days": 1, "at": "03:00", "tz": "Mars/Olympus"}, "not a known time zone"),
        ({"days": 1, "at": "03:00", "offset": 60}, "only one of at=, anchor= and offset="),
        ({"days": 1, "anchor": dt.datetime(2024, 1, 1)}, "timezone-aware"),
        ({"days": 1, "at": dt.time(3, tzinfo=UTC)}, "naive time"),
    ],
)
def test_every_refuses_bad_values(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        every(**kwargs)


def test_default_phase_is_the_epoch() -> None:
    hourly = every(hours=1)
    assert hourly.phase(MIDNIGHT + 0.25) == 0
    assert hourly.next_run(MIDNIGHT + 0.25) == MIDNIGHT + 3600
    # A run time that is exactly now is the next run.
    assert hourly.next_run(MIDNIGHT) == MIDNIGHT


def test_offset_shifts_the_phase() -> None:
    quarter_past = every(hours=1, offset=dt.timedelta(minutes=15))
    assert quarter_past.next_run(MIDNIGHT + 0.25) == MIDNIGHT + 900
    assert quarter_past.next_run(MIDNIGHT + 901) == MIDNIGHT + 900 + 3600
    assert quarter_past.aligned(MIDNIGHT + 900 + 7 * 3600, MIDNIGHT)
    assert not quarter_past.aligned(MIDNIGHT + 3600, MIDNIGHT)


def test_wall_clock_in_utc() -> None:
    nightly = every(days=1, at="03:00", tz="UTC")
    assert nightly.next_run(MIDNIGHT + 0.25) == MIDNIGHT + 3 * 3600
    assert nightly.next_run(MIDNIGHT + 4 * 3600) == MIDNIGHT + 27 * 3600
    six_hourly = every(hours=6, at="03:00")
    assert six_hourly.next_run(MIDNIGHT + 4 * 3600) == MIDNIGHT + 9 * 3600


def test_wall_clock_follows_the_zone_of_the_next_run() -> None:
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    nightly = every(days=1, at="03:00", tz="Europe/Paris")
    # Winter (CET, UTC+1): 03:00 in Paris is 02:00 UTC.
    assert nightly.next_run(ts(2024, 3, 30, 0)) == ts(2024, 3, 30, 2)
    # After noon on the Saturday, the next 03:00 is Sunday's, already in CEST (UTC+2).
    assert nightly.next_run(ts(2024, 3, 30, 12)) == ts(2024, 3, 31, 3, tz=paris)
    assert ts(2024, 3, 31, 3, tz=paris) == ts(2024, 3, 31, 1)
    # So a run time written in winter is no longer aligned once the next run is in summer.
    assert not nightly.aligned(ts(2024, 3, 31, 2), ts(2024, 3, 30, 12))


def test_anchor_gives_a_weekday() -> None:
    monday_nine = dt.datetime(2024, 1, 1, 9, tzinfo=UTC)  # a Monday
    weekly = every(weeks=1, anchor=monday_nine)
    wednesday = ts(2024, 5, 1, 12)
    assert weekly.next_run(wednesday) == ts(2024, 5, 6, 9)


def test_describe() -> None:
    assert every(minutes=5).describe() == "every 5m"
    assert every(hours=1, offset=90).describe() == "every 1h +1m30s"
    assert every(days=1, at="03:00", tz="UTC").describe() == "every 1d at 03:00 UTC"
    assert every(days=1, at="03:00:30").describe() == "every 1d at 03:00:30 UTC"
    assert duration(0) == "0s"


def test_schedule_defaults_and_conversion() -> None:
    schedule = Schedule(dt.timedelta(minutes=10), kwargs={"a": 1})
    assert schedule.every == every(minutes=10)
    assert schedule.backlog == 1
    assert schedule.args == ()
    assert dict(schedule.kwargs) == {"a": 1}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backlog": 0}, "backlog must be an integer >= 1, or None"),
        ({"backlog": True}, "backlog must be an integer >= 1"),
        ({"args": "abc"}, "args must be a list or tuple"),
        ({"kwargs": [1]}, "kwargs must be a dict"),
        ({"tags": "one"}, "tags must be a list of strings"),
        ({"name": " "}, "schedule name must be a non-empty string"),
    ],
)
def test_schedule_refuses_bad_options(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Schedule(every(minutes=1), **kwargs)


def test_schedule_refuses_unknown_option() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'cron'"):
        Schedule(every(minutes=1), cron="* * * * *")  # type: ignore[call-arg]


def test_as_schedules_accepts_every_form() -> None:
    assert as_schedules(None) == ()
    assert as_schedules(300) == (Schedule(every(minutes=5)),)
    assert as_schedules(dt.timedelta(minutes=5)) == (Schedule(every(minutes=5)),)
    named = Schedule(every(hours=1), name="x")
    assert as_schedules([named, 60]) == (named, Schedule(every(minutes=1)))
    with pytest.raises(ValueError, match="a schedule needs every"):
        as_schedules("5 minutes")
    with pytest.raises(ValueError, match="at least 1"):
        as_schedules(0)


def test_every_is_a_value() -> None:
    assert every(days=1, at="03:00") == Every(interval=86400, at=dt.time(3))
    assert every(days=1, at="03:00") != every(days=1, at="04:00")
