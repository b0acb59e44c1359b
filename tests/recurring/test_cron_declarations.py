"""Declaring cron schedules: `cron(...)`, on jobs, in QLESS["RECURRING"], and the errors."""

from __future__ import annotations

from typing import Any

import pytest

import django_qless
from django_qless import qless_job
from django_qless.cron import CronError
from django_qless.recurring import cron as reexported
from django_qless.recurring.declarations import collect
from django_qless.schedules import Cron, Schedule, cron, every

pytestmark = pytest.mark.usefixtures("clean_registry")


def job(table: str = "t") -> None:
    """A job the tests decorate."""


def declared(name: str) -> Any:
    """The resolved declaration called `name`."""
    found = collect()
    assert found.problems == ()
    [item] = [d for d in found.items if d.name == name]
    return item


def problems(settings: Any, **spec: Any) -> list[str]:
    """The problem messages of one QLESS["RECURRING"] entry."""
    settings.QLESS = {**settings.QLESS, "RECURRING": {"nightly": spec}}
    return [p.message for p in collect().problems]


def test_cron_is_exported_beside_every() -> None:
    assert reexported is cron
    # `django_qless.cron` is the parser module, not this function.
    assert not callable(django_qless.cron)
    assert cron("0 9 * * MON-FRI", tz="Europe/Paris") == Cron("0 9 * * MON-FRI",
                                                              "Europe/Paris", "latest")


@pytest.mark.parametrize(("value", "expected"), [
    ("skip", "skip"), ("latest", "latest"), (3, 3), ("3", 3), (" 2 ", 2),
])
def test_catch_up_policies(value: Any, expected: Any) -> None:
    assert cron("@daily", catch_up=value).catch_up == expected


@pytest.mark.parametrize(("kwargs", "text"), [
    ({"expression": "0 9 * *"}, "has 4 fields"),
    ({"expression": "61 * * * *"}, "minute: 61 is outside 0-59"),
    ({"expression": "0 9 * * FUNDAY"}, "day of week"),
    ({"expression": "0 0 30 2 *"}, "names no day that exists"),
    ({"expression": "@fortnightly"}, "unknown alias"),
    ({"expression": "0 9 * * *", "tz": "Mars/Olympus"}, "not a known time zone"),
    ({"expression": "0 9 * * *", "tz": ""}, "IANA zone"),
    ({"expression": "0 9 * * *", "catch_up": 0}, "catch_up must be"),
    ({"expression": "0 9 * * *", "catch_up": "all"}, "catch_up must be"),
    ({"expression": "0 9 * * *", "catch_up": True}, "catch_up must be"),
    ({"expression": "0 9 * * *", "catch_up": "\u0662"}, "catch_up must be"),  # Arabic-Indic 2
    ({"expression": "0 9 * * *", "catch_up": "\u00b2"}, "catch_up must be"),  # superscript 2
    ({"expression": "\uff10 9 * * *"}, "minute: '\uff10' is not a number"),  # full-width 0
])
def test_bad_cron_is_a_typed_clear_error(kwargs: dict[str, Any], text: str) -> None:
    expression = kwargs.pop("expression")
    with pytest.raises(CronError, match=text):
        cron(expression, **kwargs)


def test_decorator_declared_cron_schedule() -> None:
    defn = qless_job(name="crontest.report", queue="reports",
                     recur=cron("0 9 * * MON-FRI", tz="Europe/Paris", catch_up=2))(job)
    found = declared(defn.name)
    assert found.cron == Cron("0 9 * * MON-FRI", "Europe/Paris", 2)
    assert (found.klass, found.queue) == ("crontest.report", "reports")
    with pytest.raises(TypeError, match="cron schedule"):
        _ = found.interval


def test_decorator_takes_a_list_mixing_cron_and_every() -> None:
    qless_job(name="crontest.mixed", recur=[
        Schedule(cron("*/15 * * * *"), name="mixed-cron"),
        Schedule(every(hours=1), name="mixed-every"),
    ])(job)
    assert declared("mixed-cron").cron is not None
    assert declared("mixed-every").cron is None


@pytest.mark.parametrize("spec", [
    {"CRON": "0 3 * * *", "TZ": "America/New_York", "CATCH_UP": "skip"},
    {"CRON": cron("0 3 * * *", tz="America/New_York", catch_up="skip")},
    {"EVERY": cron("0 3 * * *", tz="America/New_York", catch_up="skip")},
])
def test_settings_declared_cron_schedule(settings: Any, spec: dict[str, Any]) -> None:
    settings.QLESS = {**settings.QLESS, "RECURRING": {"nightly": {
        "JOB": "recurapp.vacuum", "ARGS": ["events"], **spec}}}
    found = declared("nightly")
    assert found.cron == Cron("0 3 * * *", "America/New_York", "skip")
    assert found.klass == "recurapp.vacuum"


def test_settings_strings_as_django_environ_gives_them(settings: Any) -> None:
    # env.json / env.dict give strings only: the expression, the zone and "3".
    settings.QLESS = {**settings.QLESS, "RECURRING": {"nightly": {
        "JOB": "recurapp.vacuum", "CRON": "@daily", "TZ": "Europe/Paris", "CATCH_UP": "3",
        "ARGS": ["events"]}}}
    assert declared("nightly").cron == Cron("0 0 * * *", "Europe/Paris", 3)


@pytest.mark.parametrize(("spec", "text"), [
    ({"CRON": "0 3 * *"}, "has 4 fields"),
    ({"CRON": "0 3 * * *", "TZ": "Nowhere/Land"}, "not a known time zone"),
    ({"CRON": "0 3 * * *", "CATCH_UP": "often"}, "catch_up must be"),
    ({"CRON": "0 3 * * *", "EVERY": 60}, "give EVERY or CRON, not both"),
    ({"CRON": "0 3 * * *", "BACKLOG": 2}, "BACKLOG go(es) with EVERY"),
    ({"CRON": "0 3 * * *", "AT": "03:00"}, "AT go(es) with EVERY"),
    ({"CRON": cron("0 3 * * *"), "TZ": "UTC"}, "give TZ inside cron(...)"),
    ({"EVERY": cron("0 3 * * *"), "CATCH_UP": "skip"}, "give CATCH_UP inside cron(...)"),
    ({"EVERY": 60, "CATCH_UP": "skip"}, "CATCH_UP goes with CRON"),
])
def test_bad_settings_entries_are_reported(settings: Any, spec: dict[str, Any],
                                           text: str) -> None:
    [message] = problems(settings, JOB="recurapp.vacuum", ARGS=["t"], **spec)
    assert text in message


def test_cron_schedules_keep_the_job_checks(settings: Any) -> None:
    # A cron schedule is resolved like .enqueue(): a missing argument is reported.
    [message] = problems(settings, JOB="recurapp.vacuum", CRON="0 3 * * *")
    assert "missing a required argument" in message
