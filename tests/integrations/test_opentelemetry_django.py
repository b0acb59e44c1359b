"""OpenTelemetry: a request's trace followed into its jobs, however they were put.

Each view opens the span a Django instrumentation would open around the request, then
enqueues: on commit, through the outbox and its sweep, in bulk, as Django tasks. Cron
slots are put under a span of their own. The run of every job must be in that trace.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.test import Client as HttpClient
from django.test import override_settings
from django.urls import path
from django.utils import timezone
from opentelemetry.trace import SpanKind

from django_qless.conf import get_settings
from django_qless.connection import get_client, reset_clients
from django_qless.core import Client
from django_qless.core.crons import CronDefinition, CronStore
from django_qless.outbox.models import OutboxEntry
from django_qless.outbox.sweeper import sweep
from django_qless.schedules import MANAGED_TAG
from tests.redis_harness import RedisServer
from tests.support import FakeClock
from tests.tasks.conftest import TASKS

from .otel_support import QUEUE, Traced, tracing, work

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

#: The instrumentation of the running test (the views open their span with its tracer).
CURRENT: list[Traced] = []
UNREACHABLE = "redis://127.0.0.1:1/0"


def tasks() -> Any:
    """The Tasks test app's tasks (imported once TASKS is configured)."""
    return importlib.import_module("tests.tasks.taskapp.tasks")


def on_commit() -> list[str]:
    """One job put when the transaction commits (checked not put before)."""
    with transaction.atomic():
        jid = work.enqueue()
        assert get_client().get_job(jid) is None
    return [jid]


def outbox() -> list[str]:
    """A job and a bulk of two in the outbox (the put at commit fails: Redis is away)."""
    with transaction.atomic():
        jids = [work.enqueue(), *work.enqueue_many([((), {}), ((), {})])]
    assert OutboxEntry.objects.count() == 3
    return jids


def bulk() -> list[str]:
    """Three jobs in one `enqueue_many`, put at once."""
    return work.using(on_commit=False).enqueue_many([((), {})] * 3)


def django_tasks() -> list[str]:
    """A Django task and a bulk of two, through `QlessBackend`."""
    add = tasks().add
    many = add.get_backend().enqueue_many(add, [((3, 4), {}), ((5, 6), {})])
    return [add.enqueue(1, 2).id, *(result.id for result in many)]


ROUTES: dict[str, Callable[[], list[str]]] = {
    "on_commit": on_commit, "outbox": outbox, "bulk": bulk, "tasks": django_tasks}


def enqueue(request: HttpRequest, route: str) -> JsonResponse:
    """Enqueue by `route` inside the request's span; answers the jids and the trace id."""
    with CURRENT[0].tracer.start_as_current_span("GET /enqueue", kind=SpanKind.SERVER) as span:
        jids = ROUTES[route]()
    return JsonResponse({"jids": jids, "trace_id": span.get_span_context().trace_id})


urlpatterns = [path("enqueue/<str:route>/", enqueue)]


@pytest.fixture(autouse=True)
def qless_settings(settings: Any, redis_client: redis.Redis, redis_server: RedisServer
                   ) -> Iterator[dict[str, Any]]:
    """QLESS on the suite's server, the Tasks app installed, this module's URLs."""
    settings.QLESS = {"URL": redis_server.url, "WORKER": {"POLL_INTERVAL": 0.2}}
    apps = [*django_settings.INSTALLED_APPS, "tests.tasks.taskapp"]
    with override_settings(INSTALLED_APPS=apps, TASKS=TASKS, ROOT_URLCONF=__name__):
        yield settings.QLESS
    reset_clients()


@pytest.fixture
def traced() -> Iterator[Traced]:
    """Instrumented, spans in memory, its tracer lent to the views."""
    with tracing() as found:
        CURRENT[:] = [found]
        yield found
    CURRENT.clear()


def request(route: str) -> tuple[list[str], int]:
    """GET the view of `route`: the jids it enqueued and its trace id."""
    response = HttpClient().get(f"/enqueue/{route}/")
    assert response.status_code == 200
    body = json.loads(response.content)
    return body["jids"], body["trace_id"]


def run_worker() -> None:
    """`qless_worker` on this module's queue and the tasks' one, until they are empty."""
    call_command("qless_worker", QUEUE, "default", burst=True, verbosity=0)


def check_runs_in(traced: Traced, jids: list[str], trace_id: int) -> None:
    """Each job: one put and one run, both in the trace, the run a child of its put."""
    pairs = traced.pairs()
    assert set(pairs) == set(jids)
    for jid in jids:
        sent, ran = pairs[jid]
        assert sent.context.trace_id == ran.context.trace_id == trace_id, jid
        assert ran.parent is not None and ran.parent.span_id == sent.context.span_id


@pytest.mark.parametrize("route", ["on_commit", "bulk", "tasks"])
def test_a_requests_jobs_run_in_its_trace(traced: Traced, settings: Any, route: str) -> None:
    settings.QLESS = {**settings.QLESS, "OUTBOX": False}
    jids, trace_id = request(route)
    assert len(jids) == (1 if route == "on_commit" else 3)
    run_worker()
    check_runs_in(traced, jids, trace_id)
    if route == "tasks":
        assert {str(dict(span.attributes or {})["messaging.qless.klass"])
                for span in traced.spans(SpanKind.CONSUMER)} == {"tests.tasks.taskapp.tasks.add"}


def test_jobs_swept_from_the_outbox_run_in_the_trace_of_their_request(
    traced: Traced, settings: Any
) -> None:
    good = dict(settings.QLESS)
    settings.QLESS = {**good, "URL": UNREACHABLE}
    jids, trace_id = request("outbox")
    settings.QLESS = good
    reset_clients()
    OutboxEntry.objects.update(created=timezone.now() - timedelta(seconds=60))
    with traced.tracer.start_as_current_span("sweeper") as sweeper:
        report = sweep(get_settings().outbox, ["default"])
    assert sorted(report.put) == sorted(jids)
    run_worker()
    check_runs_in(traced, jids, trace_id)  # the request's trace, not the sweeper's
    assert sweeper.get_span_context().trace_id != trace_id


def test_cron_slots_run_in_the_trace_of_the_process_that_put_them(traced: Traced) -> None:
    qless: Client = get_client()
    defined = CronDefinition(
        name="otel-sched", expression="* * * * *", tz="UTC", catch_up="latest",
        klass="otel.work", queue=QUEUE, data=json.dumps({"args": [], "kwargs": {}}),
        priority=0.0, tags=(MANAGED_TAG,), retries=0)
    with qless.redis.pipeline() as pipe:
        CronStore(qless).queue_save(pipe, defined, qless.now() - 300)
        pipe.execute()
    # A look made now: the latest missed slot is put to run at once.
    clock = FakeClock(time.time())
    with traced.tracer.start_as_current_span("cron look") as look:
        outcomes = CronStore(Client(qless.redis, clock=clock)).create_due()
    jobs = qless.get_jobs([outcome.jid for outcome in outcomes])
    due = [job.jid for job in jobs if job.state == "waiting"]
    assert due, [(job.jid, job.state) for job in jobs]
    run_worker()
    ran = traced.by_jid(SpanKind.CONSUMER)
    assert sorted(ran) == sorted(due)
    trace_id = look.get_span_context().trace_id
    for jid in due:
        [span] = ran[jid]
        assert span.context.trace_id == trace_id
    assert len(traced.spans(SpanKind.PRODUCER)) == len(outcomes)
