"""Declaring schedules (decorator and QLESS["RECURRING"]), resolving them, and the checks."""

from __future__ import annotations

import datetime as dt
from io import StringIO
from typing import Any

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from django_qless import qless_job
from django_qless.core import Job
from django_qless.exceptions import InvalidJobError
from django_qless.recurring.declarations import collect
from django_qless.schedules import MANAGED_TAG, Schedule, every, schedule_jid

pytestmark = pytest.mark.usefixtures("clean_registry")


def job_with_defaults(n: int = 0, *, label: str = "x") -> None:
    """A job the tests decorate."""


def job_taking_job(job: Job, n: int) -> None:
    """A job that receives its qless job."""


def entry(settings: Any, name: str = "nightly", **spec: Any) -> None:
    """Put one QLESS["RECURRING"] entry in the settings."""
    settings.QLESS = {**settings.QLESS, "RECURRING": {name: spec}}


def by_name(name: str) -> Any:
    """The resolved declaration called `name`."""
    declarations = collect()
    assert declarations.problems == ()
    [found] = [d for d in declarations.items if d.name == name]
    return found


def problems(settings: Any, **spec: Any) -> list[tuple[str, str, str]]:
    """(id, where, message) for one entry."""
    entry(settings, **spec)
    return [(p.id, p.key, p.message) for p in collect().problems]


def test_code_declarations_are_collected_sorted_by_name() -> None:
    names = [d.name for d in collect().items]
    assert names == ["recurapp.nightly_cleanup", "recurapp.poll_feed", "report-eu", "report-us"]


def test_decorator_schedule_takes_the_job_options() -> None:
    defn = qless_job(queue="jobs-q", priority=4, tags=["a"], retries=1,
                     recur=dt.timedelta(minutes=2))(job_with_defaults)
    found = by_name(defn.name)
    assert found.jid == schedule_jid(defn.name)
    assert (found.queue, found.priority, found.retries, found.backlog) == ("jobs-q", 4, 1, 1)
    assert found.tags == ("a", MANAGED_TAG)
    assert found.every == every(minutes=2)
    assert found.data == {"args": [], "kwargs": {}}
    assert found.connection == "default"


def test_schedule_options_override_the_job_and_defaults_fill_the_rest() -> None:
    defn = qless_job(priority=4, recur=Schedule(
        every(hours=1), name="hourly-7", args=[7], kwargs={"label": "y"}, queue="q2",
        tags=["t"], backlog=None,
    ))(job_with_defaults)
    found = by_name("hourly-7")
    assert (found.klass, found.queue, found.priority, found.retries) == (defn.name, "q2", 4, 5)
    assert found.tags == ("t", MANAGED_TAG)
    assert found.backlog == 0
    assert found.data == {"args": [7], "kwargs": {"label": "y"}}


def test_takes_job_schedules_leave_the_job_out_of_args() -> None:
    qless_job(takes_job=True, recur=Schedule(every(minutes=1), args=[3]))(job_taking_job)
    assert collect().problems == ()


@pytest.mark.parametrize(
    ("recur", "error"),
    [(0, "interval must be at least 1"), (-60, "at least 1"), ("daily", "a schedule needs"),
     (1.5, "whole number"), ([Schedule(every(minutes=1)), "x"], "a schedule needs")],
)
def test_decorator_refuses_bad_recur(recur: Any, error: str) -> None:
    with pytest.raises(InvalidJobError, match=error):
        qless_job(recur=recur)(job_with_defaults)


def test_setting_entry_forms(settings: Any) -> None:
    entry(settings, JOB="recurapp.vacuum", EVERY=dt.timedelta(hours=6), AT="01:30",
          TZ="Europe/Paris", ARGS=["t"], PRIORITY=2, RETRIES=0, BACKLOG=3, TAGS=["db"])
    found = by_name("nightly")
    assert found.every == every(hours=6, at="01:30", tz="Europe/Paris")
    assert (found.queue, found.priority, found.retries, found.backlog) == (
        "maintenance", 2, 0, 3)
    assert found.source == "QLESS['RECURRING']['nightly']"
    entry(settings, JOB="recurapp.vacuum", EVERY=every(minutes=5, offset=60), ARGS=["t"])
    assert by_name("nightly").every == every(minutes=5, offset=60)


@pytest.mark.parametrize(
    ("spec", "check_id", "where", "text"),
    [
        ({"JOB": "recurapp.vacuum", "EVERY": 60, "ARGS": ["t"], "CRONTAB": "* * * * *"},
         "E020", "", "unknown option(s) CRONTAB"),
        ({"JOB": "recurapp.vacuum", "EVERY": 60, "ARGS": ["t"], "CRON": "* * * * *"},
         "E020", "", "give EVERY or CRON, not both"),
        ({"JOB": "recurapp.vacuum"}, "E020", "", "needs EVERY"),
        ({"JOB": "recurapp.vacuum", "EVERY": 0, "ARGS": ["t"]}, "E020", "",
         "interval must be at least 1"),
        ({"JOB": "recurapp.vacuum", "EVERY": -5, "ARGS": ["t"]}, "E020", "", "at least 1"),
        ({"JOB": "recurapp.vacuum", "EVERY": every(days=1), "AT": "03:00", "ARGS": ["t"]},
         "E020", "", "give AT inside every(...)"),
        ({"JOB": "recurapp.vacuum", "EVERY": 60, "BACKLOG": 0, "ARGS": ["t"]}, "E020", "",
         "backlog must be an integer >= 1"),
        ({"JOB": "no.such.job", "EVERY": 60}, "E021", "['JOB']", "not a registered job"),
        ({"JOB": "recurapp.vacuum", "EVERY": 60}, "E023", "",
         "missing a required argument: 'table'"),
        ({"JOB": "recurapp.vacuum", "EVERY": 60, "KWARGS": {"table": "t", "x": 1}}, "E023", "",
         "unexpected keyword argument 'x'"),
        ({"JOB": "recurapp.vacuum", "EVERY": 60, "ARGS": [{1, 2}]}, "E023", "", "JSON"),
        ({"JOB": "recurapp.vacuum", "EVERY": 60, "ARGS": ["t"], "CONNECTION": "nope"}, "E023",
         "", "'nope'"),
        ({"JOB": "recurapp.vacuum", "EVERY": 60, "ARGS": ["t"], "QUEUE": "bad queue"}, "E023",
         "", "queue name"),
    ],
)
def test_bad_setting_entries_are_reported(
    settings: Any, spec: dict[str, Any], check_id: str, where: str, text: str
) -> None:
    [(found_id, key, message)] = problems(settings, **spec)
    assert found_id == f"django_qless.{check_id}"
    assert key == "QLESS['RECURRING']['nightly']" + where
    assert text in message


def test_entry_that_is_not_a_dict(settings: Any) -> None:
    settings.QLESS = {**settings.QLESS, "RECURRING": {"x": 60}}
    [problem] = collect().problems
    assert problem.id == "django_qless.E020"
    assert "must be a dict with JOB and EVERY" in problem.message


def test_duplicate_schedule_names(settings: Any) -> None:
    entry(settings, name="report-eu", JOB="recurapp.vacuum", EVERY=60, ARGS=["t"])
    [problem] = collect().problems
    assert problem.id == "django_qless.E022"
    assert "'report-eu'" in problem.message
    assert "@qless_job recurapp.regional_report" in problem.message


def test_two_unnamed_schedules_on_one_job_collide() -> None:
    qless_job(recur=[60, 120])(job_with_defaults)
    assert [p.id for p in collect().problems] == ["django_qless.E022"]


def test_system_check_reports_each_problem(settings: Any) -> None:
    settings.QLESS = {**settings.QLESS, "RECURRING": {
        "a": {"JOB": "no.such.job", "EVERY": 60},
        "b": {"JOB": "recurapp.vacuum", "EVERY": 0},
    }}
    ids = sorted(m.id for m in run_checks(tags=["django_qless"]))
    assert ids == ["django_qless.E020", "django_qless.E021"]
    with pytest.raises(SystemCheckError) as err:
        call_command("check", stdout=StringIO(), stderr=StringIO())
    assert "QLESS['RECURRING']['a']['JOB'] names 'no.such.job'" in str(err.value)


def test_valid_declarations_pass_the_checks() -> None:
    assert run_checks(tags=["django_qless"]) == []


def test_recurring_setting_must_be_a_dict(settings: Any) -> None:
    settings.QLESS = {**settings.QLESS, "RECURRING": [1]}
    messages = run_checks(tags=["django_qless"])
    assert [(m.id, m.msg.split(" ")[0]) for m in messages] == [
        ("django_qless.E003", "QLESS['RECURRING']")
    ]
