"""Pages that enqueue jobs, for the Sentry trace tests (this module is their ROOT_URLCONF)."""

from __future__ import annotations

import json

import sentry_sdk
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.urls import path

from tests.testapp.qless_jobs import add, explode


def on_commit(request: HttpRequest) -> HttpResponse:
    """One job enqueued in a transaction: put when it commits (or kept in the outbox)."""
    with transaction.atomic():
        jids = [add.enqueue(1, 2)]
    return HttpResponse(json.dumps(jids))


def bulk(request: HttpRequest) -> HttpResponse:
    """Three jobs in one `enqueue_many`, in a transaction."""
    with transaction.atomic():
        jids = add.enqueue_many([((n, n), {}) for n in range(3)])
    return HttpResponse(json.dumps(jids))


def failing(request: HttpRequest) -> HttpResponse:
    """A job that fails, and the request's trace (its `sentry-trace` header's value) last."""
    jids = [explode.using(on_commit=False).enqueue("from a request")]
    return HttpResponse(json.dumps([*jids, sentry_sdk.get_traceparent()]))


def task(request: HttpRequest) -> HttpResponse:
    """A Django task sent to `QlessBackend` (TASKS configured by the test)."""
    from tests.tasks.taskapp.tasks import add as add_task  # noqa: PLC0415 - needs TASKS

    return HttpResponse(json.dumps([add_task.enqueue(2, 3).id]))


urlpatterns = [
    path("on-commit/", on_commit),
    path("bulk/", bulk),
    path("task/", task),
    path("failing/", failing),
]
