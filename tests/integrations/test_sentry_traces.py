"""A job continues the trace of the request that enqueued it, however it was put.

The requests are served by Django's `WSGIHandler`, where Sentry's Django integration
starts the request's transaction (the test client's handler is not wrapped by it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.handlers.wsgi import WSGIHandler
from django.test import RequestFactory, override_settings
from django.utils import timezone
from sentry_sdk.integrations.django import DjangoIntegration

from django_qless.conf import get_settings
from django_qless.integrations.sentry import QlessIntegration
from django_qless.outbox.models import OutboxEntry
from django_qless.outbox.sweeper import sweep
from django_qless.worker import Worker
from tests.tasks.conftest import TASKS
from tests.testapp.qless_jobs import add

from .sentry_support import SentryRun, trace

# Both databases: a burst worker sweeps the outbox of each.
pytestmark = [pytest.mark.django_db(transaction=True, databases=["default", "other"]),
              pytest.mark.usefixtures("urls")]

Run = Callable[..., Worker]


@pytest.fixture
def urls() -> Any:
    """The pages of `sentry_views`."""
    with override_settings(ROOT_URLCONF="tests.integrations.sentry_views"):
        yield


def get(path: str) -> list[str]:
    """Serve a GET through Django's WSGI handler; the jids the page enqueued."""
    statuses: list[str] = []

    def start_response(status: str, headers: Any, exc_info: Any = None) -> None:
        statuses.append(status)

    environ = RequestFactory().get(path).environ
    body = WSGIHandler()(environ, start_response)
    try:
        content = b"".join(body)
    finally:
        body.close()
    assert statuses == ["200 OK"], content
    jids: list[str] = json.loads(content)
    return jids


def traced(sentry: SentryRun) -> None:
    """Sentry with Django and qless, tracing everything."""
    sentry.init([DjangoIntegration(), QlessIntegration()], traces_sample_rate=1.0)


def request_trace(sentry: SentryRun, path: str) -> dict[str, Any]:
    """The trace context of the request's transaction."""
    [request] = [t for t in sentry.transactions("http.server")
                 if t["request"]["url"].endswith(path)]
    return trace(request)


def check_continued(sentry: SentryRun, path: str, jids: list[str]) -> None:
    """Each job is one transaction in the request's trace, a child of one of its spans."""
    request = request_trace(sentry, path)
    jobs = sentry.by_jid()
    assert sorted(jobs) == sorted(jids)
    for job in jobs.values():
        assert trace(job)["trace_id"] == request["trace_id"]
        assert trace(job)["parent_span_id"]  # the span that enqueued it
        assert trace(job)["span_id"] != request["span_id"]


def test_a_job_put_after_commit_continues_the_request_trace(
    sentry: SentryRun, settings: Any, run_worker: Run
) -> None:
    settings.QLESS = {**settings.QLESS, "OUTBOX": False}
    traced(sentry)
    jids = get("/on-commit/")
    run_worker("default")
    check_continued(sentry, "/on-commit/", jids)


def test_bulk_jobs_each_continue_the_request_trace(
    sentry: SentryRun, run_worker: Run
) -> None:
    traced(sentry)
    jids = get("/bulk/")
    assert len(jids) == 3
    run_worker("default")
    check_continued(sentry, "/bulk/", jids)


def test_a_job_put_by_the_outbox_sweep_continues_the_request_trace(
    sentry: SentryRun, settings: Any, run_worker: Run
) -> None:
    traced(sentry)
    good = dict(settings.QLESS)
    settings.QLESS = {**good, "URL": "redis://127.0.0.1:1/0"}  # the put at commit fails
    jids = get("/on-commit/")
    assert OutboxEntry.objects.count() == 1
    settings.QLESS = good
    OutboxEntry.objects.update(created=timezone.now() - timedelta(seconds=60))
    # The sweep runs outside the request, in a trace of its own (as in a worker).
    report = sweep(get_settings().outbox, ["default"])
    assert report.put == jids
    run_worker("default")
    check_continued(sentry, "/on-commit/", jids)


def test_a_django_task_continues_the_request_trace(
    sentry: SentryRun, run_worker: Run
) -> None:
    apps = [*django_settings.INSTALLED_APPS, "tests.tasks.taskapp"]
    with override_settings(INSTALLED_APPS=apps, TASKS=TASKS):
        traced(sentry)
        jids = get("/task/")
        run_worker("default")
    check_continued(sentry, "/task/", jids)
    assert sentry.by_jid()[jids[0]]["transaction"] == "tests.tasks.taskapp.tasks.add"


def test_without_tracing_a_failure_is_still_in_the_request_trace(
    sentry: SentryRun, run_worker: Run
) -> None:
    sentry.init([DjangoIntegration(), QlessIntegration()], traces_sample_rate=None)
    jid, traceparent = get("/failing/")
    run_worker("default")
    assert sentry.items("transaction") == []
    [event] = sentry.events()
    assert event["tags"]["qless.jid"] == jid
    assert trace(event)["trace_id"] == traceparent.split("-")[0]


def test_jobs_enqueued_outside_any_span_start_traces_of_their_own(
    sentry: SentryRun, qless: Any, run_worker: Run
) -> None:
    traced(sentry)
    # As the worker's monitor thread puts cron slots: one thread, no request, no span.
    jids = [add.using(on_commit=False).enqueue(1, 1) for _ in range(2)]
    jids.append(qless.queue("default").put("tests.testapp.qless_jobs.add",
                                           {"args": [1, 1], "kwargs": {}}))  # another client
    run_worker("default")
    jobs = sentry.by_jid()
    assert sorted(jobs) == sorted(jids)
    assert all(trace(job).get("parent_span_id") is None for job in jobs.values())
    assert len({trace(job)["trace_id"] for job in jobs.values()}) == 3
