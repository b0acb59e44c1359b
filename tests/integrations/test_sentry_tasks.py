"""A failed Django task reaches Sentry once: as the run hook's event, not as log lines."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest
from django.conf import settings as django_settings
from django.test import override_settings
from sentry_sdk.integrations.logging import LoggingIntegration

from django_qless.worker import Worker
from tests.tasks.compat import PACKAGE
from tests.tasks.conftest import TASKS

from .sentry_support import SentryRun


@pytest.fixture
def tasks() -> Iterator[ModuleType]:
    """The task app installed, TASKS on qless, its tasks module."""
    apps = [*django_settings.INSTALLED_APPS, "tests.tasks.taskapp"]
    with override_settings(INSTALLED_APPS=apps, TASKS=TASKS):
        yield importlib.import_module("tests.tasks.taskapp.tasks")


def test_a_failed_task_is_one_event(
    sentry: SentryRun, tasks: ModuleType, run_worker: Callable[..., Worker]
) -> None:
    sentry.init_without_dedupe()
    ok = tasks.add.enqueue(1, 2)
    failed = tasks.explode.enqueue("gone")
    run_worker("default")
    [event] = sentry.events()
    assert event["tags"]["qless.jid"] == failed.id
    assert event["tags"]["qless.klass"] == "tests.tasks.taskapp.tasks.explode"
    assert event["tags"]["qless.group"] == "default-LookupError"
    [exception] = event["exception"]["values"]
    assert exception["type"] == "LookupError"
    assert exception["mechanism"] == {"type": "qless", "handled": False}
    transactions = sentry.by_jid()
    assert set(transactions) == {ok.id, failed.id}
    assert transactions[failed.id]["transaction"] == "tests.tasks.taskapp.tasks.explode"


def test_without_the_integration_the_task_framework_logs_it(
    sentry: SentryRun, tasks: ModuleType, run_worker: Callable[..., Worker]
) -> None:
    """What the integration prevents: both log lines reported, the task's without its error."""
    sentry.init([LoggingIntegration()], default_integrations=False)
    failed = tasks.explode.enqueue("gone")
    run_worker("default")
    loggers = sorted(event["logger"] for event in sentry.events())
    assert loggers == sorted(["django_qless", PACKAGE])
    assert all(failed.id in str(event) for event in sentry.events())
