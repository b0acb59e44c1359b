"""System checks: each malformed QLESS key is reported by name; job routing is checked."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.checks import Error, run_checks
from django.core.checks import Warning as CheckWarning
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from django_qless import qless_job
from django_qless.checks import check_jobs, check_settings
from tests.django_layer.test_settings import MALFORMED

pytestmark = pytest.mark.usefixtures("clean_registry")


def job_on_reports(n: int) -> int:
    """A job the checks look at."""
    return n


def test_valid_settings_pass(qless_url: str) -> None:
    assert check_settings() == []
    assert check_jobs() == []


@pytest.mark.parametrize(("raw", "key", "check_id"), MALFORMED)
def test_each_malformed_key_is_an_error_naming_it(
    settings: Any, raw: Any, key: str, check_id: str
) -> None:
    settings.QLESS = raw
    [message] = check_settings()
    assert isinstance(message, Error)
    assert message.id == check_id
    assert message.msg.startswith(key + " ")
    assert message.obj == "settings.QLESS"


def test_manage_py_check_fails_with_the_key_in_the_output(settings: Any) -> None:
    settings.QLESS = {"WORKER": {"PROCESSES": 0}, "IMMEDIATE": "yes"}
    with pytest.raises(SystemCheckError) as err:
        call_command("check", stdout=StringIO(), stderr=StringIO())
    text = str(err.value)
    assert "django_qless.E003" in text
    assert "QLESS['WORKER']['PROCESSES'] must be an integer >= 1, got 0" in text
    assert "QLESS['IMMEDIATE'] must be True or False, got 'yes'" in text


def test_checks_are_registered_with_django(settings: Any) -> None:
    settings.QLESS = {"TYPO": 1}
    assert [m.id for m in run_checks(tags=["django_qless"])] == ["django_qless.E002"]


def test_job_naming_an_unknown_connection_is_an_error(qless_url: str) -> None:
    defn = qless_job(connection="reports")(job_on_reports)
    [message] = check_jobs()
    assert isinstance(message, Error)
    assert message.id == "django_qless.E010"
    assert "'reports'" in message.msg
    assert message.obj == defn.name


def test_job_pinned_against_the_routing_is_a_warning(settings: Any, qless_url: str) -> None:
    settings.QLESS = {
        "URL": qless_url,
        "CONNECTIONS": {"reports": {"URL": qless_url, "QUEUES": ["reports"]}},
    }
    qless_job(queue="reports", connection="default")(job_on_reports)
    [message] = check_jobs()
    assert isinstance(message, CheckWarning)
    assert message.id == "django_qless.W001"
    assert "routes that queue to 'reports'" in message.msg


def test_job_checks_wait_for_valid_settings(settings: Any) -> None:
    qless_job(connection="reports")(job_on_reports)
    settings.QLESS = {"IMMEDIATE": 1}
    assert check_jobs() == []
    assert len(check_settings()) == 1
