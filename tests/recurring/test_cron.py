"""Cron expressions: the fields, Vixie cron's day rule, and slots across daylight saving."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest

from django_qless.cron import CronError, CronExpression

UTC = dt.timezone.utc
PARIS = zoneinfo.ZoneInfo("Europe/Paris")


def runs(expression: str, tz: str, after: dt.datetime, count: int) -> list[str]:
    """The next run instants, as UTC text."""
    slots = CronExpression.parse(expression).next_slots(tz, after, count)
    return [slot.at.strftime("%Y-%m-%d %H:%M") for slot in slots]


def utc(*parts: int) -> dt.datetime:
    """An aware UTC datetime."""
    return dt.datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(("text", "field", "values"), [
    ("*/20 * * * *", "minutes", {0, 20, 40}),
    ("5-10/2 * * * *", "minutes", {5, 7, 9}),
    ("1,2,30-31 * * * *", "minutes", {1, 2, 30, 31}),
    ("0 9-17/4 * * *", "hours", {9, 13, 17}),
    ("0 0 * JAN,mar-MAY *", "months", {1, 3, 4, 5}),
    ("0 0 * * MON-FRI", "weekdays", {1, 2, 3, 4, 5}),
    ("0 0 * * 7", "weekdays", {0}),
    ("0 0 * * SAT-7", "weekdays", {6, 0}),
    ("0 0 10/10 * *", "days", {10, 20, 30}),
])
def test_fields(text: str, field: str, values: set[int]) -> None:
    assert getattr(CronExpression.parse(text), field) == values


@pytest.mark.parametrize(("alias", "same_as"), [
    ("@yearly", "0 0 1 1 *"), ("@annually", "0 0 1 1 *"), ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"), ("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
])
def test_aliases(alias: str, same_as: str) -> None:
    assert CronExpression.parse(alias) == CronExpression.parse(same_as)


def test_weekdays_at_nine_in_paris() -> None:
    # 2026-11-24 is a Tuesday; Paris is UTC+1 in winter.
    assert runs("0 9 * * MON-FRI", "Europe/Paris", utc(2026, 11, 26, 12), 3) == [
        "2026-11-27 08:00", "2026-11-30 08:00", "2026-12-01 08:00"]


def test_day_of_month_or_day_of_week_when_both_are_given() -> None:
    # Vixie cron: the 1st of the month, and every Monday.
    assert runs("0 0 1 * MON", "UTC", utc(2026, 6, 27), 3) == [
        "2026-06-29 00:00", "2026-07-01 00:00", "2026-07-06 00:00"]


def test_a_starred_step_still_counts_as_any_day() -> None:
    # "*/2" starts with "*": only the day-of-week restricts (every second day AND Monday).
    assert runs("0 0 */2 * MON", "UTC", utc(2026, 6, 1), 2) == [
        "2026-06-15 00:00", "2026-06-29 00:00"]


def test_leap_day() -> None:
    assert runs("0 3 29 2 *", "UTC", utc(2026, 11, 24), 2) == [
        "2028-02-29 03:00", "2032-02-29 03:00"]


def test_spring_forward_slot_runs_once_at_the_jump() -> None:
    # Paris 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC); 02:30 does not exist.
    assert runs("30 2 * * *", "Europe/Paris", utc(2026, 3, 28, 12), 3) == [
        "2026-03-29 01:00", "2026-03-30 00:30", "2026-03-31 00:30"]


def test_several_skipped_slots_become_one() -> None:
    assert runs("*/15 2 * * *", "Europe/Paris", utc(2026, 3, 28, 12), 2) == [
        "2026-03-29 01:00", "2026-03-30 00:00"]
    # ... and a slot at the jump itself is the same run.
    assert runs("0,30 2,3 * * *", "Europe/Paris", utc(2026, 3, 28, 12), 3) == [
        "2026-03-29 01:00", "2026-03-29 01:30", "2026-03-30 00:00"]


def test_fall_back_slot_runs_once_at_its_first_occurrence() -> None:
    # Paris 2026-10-25: 03:00 CEST goes back to 02:00 CET; 02:30 happens twice.
    assert runs("30 2 * * *", "Europe/Paris", utc(2026, 10, 24, 12), 2) == [
        "2026-10-25 00:30", "2026-10-26 01:30"]
    every_quarter = runs("*/15 * * * *", "Europe/Paris", utc(2026, 10, 24, 23, 50), 10)
    assert every_quarter == [
        "2026-10-25 00:00", "2026-10-25 00:15", "2026-10-25 00:30", "2026-10-25 00:45",
        "2026-10-25 02:00", "2026-10-25 02:15", "2026-10-25 02:30", "2026-10-25 02:45",
        "2026-10-25 03:00", "2026-10-25 03:15"]


def test_starting_inside_the_repeated_hour_does_not_repeat_a_slot() -> None:
    # 01:10 UTC is the second 02:10 in Paris: the 02:30 slot already ran (at 00:30 UTC).
    assert runs("30 2 * * *", "Europe/Paris", utc(2026, 10, 25, 1, 10), 1) == ["2026-10-26 01:30"]


def test_new_york_spring_forward() -> None:
    # 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00 UTC).
    assert runs("30 2 * * *", "America/New_York", utc(2026, 3, 7, 12), 2) == [
        "2026-03-08 07:00", "2026-03-09 06:30"]


def test_wall_time_is_kept_for_each_slot() -> None:
    (slot,) = CronExpression.parse("30 2 * * *").next_slots("Europe/Paris", utc(2026, 3, 28, 12), 1)
    assert slot.wall == dt.datetime(2026, 3, 29, 2, 30)
    assert slot.at.astimezone(PARIS).hour == 3


@pytest.mark.parametrize(("text", "message"), [
    ("* * *", "five"),
    ("60 * * * *", "minute: 60 is outside 0-59"),
    ("0 24 * * *", "hour: 24"),
    ("0 0 0 * *", "day of month: 0"),
    ("0 0 * 13 *", "month: 13"),
    ("0 0 * * 8", "day of week: 8"),
    ("0 0 * * FUNDAY", "not a number nor one of SUN"),
    ("*/0 * * * *", "above 0"),
    ("10-5 * * * *", "backwards"),
    ("0 0 30 2 *", "no day that exists"),
    ("@reboot", "unknown alias"),
    ("", "five"),
    # Digits of other scripts pass str.isdigit(); int() reads some and refuses others.
    ("\u0665 * * * *", "minute: '\u0665' is not a number"),  # Arabic-Indic 5
    ("0 \uff19 * * *", "hour: '\uff19' is not a number"),  # full-width 9
    ("0 9 \u0661-3 * *", "day of month: '\u0661' is not a number"),
    ("0 9 * 1-\u0663 *", "month: '\u0663' is not a number"),
    ("*/\u0662 * * * *", "minute: step in"),
    ("0 \u00b2 * * *", "hour: '\u00b2' is not a number"),  # superscript two
    ("0 9 * * \u0967", "day of week: '\u0967' is not a number"),  # Devanagari 1
])
def test_bad_expressions_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(CronError, match=message):
        CronExpression.parse(text)


def test_unknown_zone() -> None:
    with pytest.raises(CronError, match="time zone"):
        CronExpression.parse("@daily").next_slots("Mars/Olympus", utc(2026, 1, 1), 1)
