"""OpenTelemetry: span pairs of puts and runs in the worker (serial, threads, async, retries)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind, StatusCode

from django_qless.connection import get_client, reset_clients
from django_qless.core import Client
from django_qless.core import hooks as core_hooks
from django_qless.hooks import META_KEY
from django_qless.integrations.opentelemetry import QlessInstrumentor
from tests.redis_harness import RedisServer

from .otel_support import (
    QUEUE,
    SEEN,
    FileExporter,
    Traced,
    awork,
    exported,
    flaky,
    tracing,
    work,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def qless_settings(settings: Any, redis_client: redis.Redis, redis_server: RedisServer,
                   django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    """QLESS on the suite's (flushed) server; the worker may close Django connections."""
    settings.QLESS = {"URL": redis_server.url, "WORKER": {"POLL_INTERVAL": 0.2}}
    with django_db_blocker.unblock():
        yield settings.QLESS
    reset_clients()


@pytest.fixture
def traced() -> Iterator[Traced]:
    """Instrumented, spans in memory."""
    with tracing() as found:
        yield found


@pytest.fixture
def qless(qless_settings: dict[str, Any]) -> Client:
    """The application's qless client."""
    return get_client()


def run_worker(**options: Any) -> None:
    """`qless_worker otel --burst` in this process."""
    call_command("qless_worker", QUEUE, burst=True, verbosity=0, **options)


def ids(span: Any) -> tuple[int, int]:
    """A span's (trace id, span id)."""
    context = span.get_span_context()
    return context.trace_id, context.span_id


def test_a_put_and_its_run_are_one_span_pair_in_the_enqueuers_trace(
    traced: Traced, qless: Client
) -> None:
    with traced.tracer.start_as_current_span("request") as request:
        jid = work.using(on_commit=False).enqueue()
    carried = qless.get_job(jid).data[META_KEY]["otel"]  # type: ignore[union-attr]
    run_worker()
    [(sent, ran)] = traced.pairs().values()
    trace_id, request_id = ids(request)
    assert sent.name == f"send {QUEUE}" and ran.name == f"process {QUEUE}"
    assert sent.kind == SpanKind.PRODUCER and ran.kind == SpanKind.CONSUMER
    # The producer is the request's child; the run is the producer's child.
    assert sent.parent is not None and sent.parent.span_id == request_id
    assert ran.parent is not None and ran.parent.span_id == sent.context.span_id
    assert sent.context.trace_id == ran.context.trace_id == trace_id
    _, carried_trace, carried_span, flags = carried["traceparent"].split("-")
    assert (carried_trace, carried_span) == (f"{trace_id:032x}", f"{sent.context.span_id:016x}")
    assert int(flags, 16) & 1  # sampled
    assert SEEN[jid] == (trace_id, ran.context.span_id)  # the job ran in its span
    common = {"messaging.system": "qless", "messaging.destination.name": QUEUE,
              "messaging.message.id": jid, "messaging.qless.klass": "otel.work"}
    assert dict(sent.attributes or {}) == {
        **common, "messaging.operation.type": "send", "messaging.operation.name": "send"}
    worker = dict(ran.attributes or {})["messaging.client.id"]
    assert dict(ran.attributes or {}) == {
        **common, "messaging.operation.type": "process", "messaging.operation.name": "process",
        "messaging.qless.attempt": 1, "messaging.qless.retries": 5,
        "messaging.client.id": worker}
    assert ran.status.status_code == StatusCode.UNSET and not ran.events


def test_a_failure_is_recorded_on_the_run_with_an_error_status(
    traced: Traced, qless: Client
) -> None:
    jid = work.using(on_commit=False).enqueue(fail=True)
    run_worker()
    sent, ran = traced.pairs()[jid]
    assert ran.status.status_code == StatusCode.ERROR
    assert ran.status.description == "ValueError: boom"
    [event] = ran.events
    assert event.name == "exception"
    assert dict(event.attributes or {})["exception.type"] == "ValueError"
    assert dict(event.attributes or {})["exception.message"] == "boom"
    assert sent.status.status_code == StatusCode.UNSET
    assert qless.get_job(jid).state == "failed"  # type: ignore[union-attr]


def test_a_retried_job_shows_each_attempt_under_its_one_put(traced: Traced) -> None:
    jid = flaky.using(on_commit=False).enqueue()
    run_worker()
    [sent] = traced.by_jid(SpanKind.PRODUCER)[jid]
    runs = traced.by_jid(SpanKind.CONSUMER)[jid]
    assert [dict(run.attributes or {})["messaging.qless.attempt"] for run in runs] == [1, 2]
    assert [run.status.status_code for run in runs] == [StatusCode.ERROR, StatusCode.UNSET]
    for run in runs:
        assert run.parent is not None and run.parent.span_id == sent.context.span_id
        assert run.context.trace_id == sent.context.trace_id


def test_consecutive_jobs_enqueued_in_different_traces_share_none(traced: Traced) -> None:
    traces = []
    jids = []
    for name in ("first", "second"):
        with traced.tracer.start_as_current_span(name) as span:
            jids.append(work.using(on_commit=False).enqueue())
        traces.append(span.get_span_context().trace_id)
    jids.append(work.using(on_commit=False).enqueue())  # outside any trace: a root put
    run_worker()
    pairs = traced.pairs()
    ran = [pairs[jid][1] for jid in jids]
    assert [span.context.trace_id for span in ran[:2]] == traces
    assert pairs[jids[2]][0].parent is None
    assert len({span.context.trace_id for span in ran}) == 3
    # The worker's context was restored after each run: no run is another's child.
    run_ids = {span.context.span_id for span in ran}
    assert not any(span.parent is not None and span.parent.span_id in run_ids for span in ran)


@pytest.mark.parametrize("job", [work, awork], ids=["threads", "event loop"])
def test_concurrent_jobs_each_run_in_their_own_span(traced: Traced, job: Any) -> None:
    expected = {}
    for n in range(4):
        with traced.tracer.start_as_current_span(f"request {n}") as span:
            expected[job.using(on_commit=False).enqueue(pause=0.3)] = (
                span.get_span_context().trace_id)
    run_worker(concurrency=4)
    pairs = traced.pairs()
    assert set(pairs) == set(expected)
    for jid, trace_id in expected.items():
        ran = pairs[jid][1]
        assert ran.context.trace_id == trace_id
        assert SEEN[jid] == (trace_id, ran.context.span_id)
    # They overlapped: every run started before the first one ended.
    runs = [pair[1] for pair in pairs.values()]
    assert max(run.start_time or 0 for run in runs) < min(run.end_time or 0 for run in runs)


def test_an_isolated_childs_run_is_exported_before_the_child_exits(
    qless_settings: dict[str, Any], tmp_path: Path
) -> None:
    # A batch processor that would wait ten minutes: only a flush exports within the test.
    path = tmp_path / "spans.jsonl"
    batch = BatchSpanProcessor(FileExporter(path), schedule_delay_millis=600_000)
    with tracing(batch) as traced:
        with traced.tracer.start_as_current_span("request") as request:
            ok = work.using(on_commit=False).enqueue()
            bad = work.using(on_commit=False).enqueue(fail=True)
        run_worker(isolation="process")
        runs = {span["jid"]: span for span in exported(path) if span["kind"] == "CONSUMER"}
    assert set(runs) == {ok, bad}
    assert {span["pid"] for span in runs.values()}.isdisjoint({os.getpid()})
    assert {span["trace_id"] for span in runs.values()} == {request.get_span_context().trace_id}
    assert (runs[ok]["status"], runs[bad]["status"]) == ("UNSET", "ERROR")
    assert traced.by_jid(SpanKind.CONSUMER) == {}  # nothing ran in this process


def test_a_trace_not_sampled_is_carried_unsampled_and_records_nothing(
    qless_settings: dict[str, Any], qless: Client
) -> None:
    with tracing(sampler=ALWAYS_OFF) as traced:
        with traced.tracer.start_as_current_span("request") as request:
            jid = work.using(on_commit=False).enqueue()
        run_worker()
    assert traced.exporter.get_finished_spans() == ()
    carried = qless.get_job(jid).data[META_KEY]["otel"]["traceparent"]  # type: ignore[union-attr]
    _, trace_id, _, flags = carried.split("-")
    assert trace_id == f"{request.get_span_context().trace_id:032x}"
    assert not int(flags, 16) & 1  # not sampled: the run is not sampled either
    assert SEEN[jid][0] == request.get_span_context().trace_id


def test_links_instead_of_a_parent_when_asked(qless_settings: dict[str, Any]) -> None:
    with tracing(use_span_links=True) as traced:
        with traced.tracer.start_as_current_span("request"):
            jid = work.using(on_commit=False).enqueue()
        run_worker()
        sent, ran = traced.pairs()[jid]
    assert ran.parent is None and ran.context.trace_id != sent.context.trace_id
    [link] = ran.links
    assert link.context.span_id == sent.context.span_id
    assert link.context.trace_id == sent.context.trace_id


def test_uninstrument_removes_both_hooks(qless: Client) -> None:
    with tracing() as traced:
        send, process = QlessInstrumentor()._hooks.send, QlessInstrumentor()._hooks.process
        assert send in core_hooks.enqueue_hooks() and process in core_hooks.run_hooks()
    assert send not in core_hooks.enqueue_hooks() and process not in core_hooks.run_hooks()
    jid = work.using(on_commit=False).enqueue()
    run_worker()
    assert META_KEY not in qless.get_job(jid).data  # type: ignore[union-attr]
    assert traced.exporter.get_finished_spans() == ()
    assert jid in SEEN  # it ran, untraced


GLOBAL_PROVIDER = """
import json
import django
django.setup()
from django.core.management import call_command
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from django_qless.integrations.opentelemetry import QlessInstrumentor
from tests.integrations.otel_support import work

QlessInstrumentor().instrument()  # before the SDK is set up: its provider is used all the same
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
with trace.get_tracer("script").start_as_current_span("main"):
    work.using(on_commit=False).enqueue()
call_command("qless_worker", "otel", burst=True, verbosity=0)
spans = exporter.get_finished_spans()
print(json.dumps(sorted([span.name, span.kind.name, span.context.trace_id] for span in spans)))
"""


def test_without_a_provider_given_the_global_one_is_used(redis_server: RedisServer) -> None:
    # In a process of its own: the global provider can be set once per process.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.workerapp.settings",
           "QLESS_TEST_URL": redis_server.url, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", GLOBAL_PROVIDER], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stderr
    spans = json.loads(result.stdout.splitlines()[-1])
    assert [(name, kind) for name, kind, _ in spans] == [
        ("main", "INTERNAL"), ("process otel", "CONSUMER"), ("send otel", "PRODUCER")]
    assert len({trace_id for _, _, trace_id in spans}) == 1


def test_django_qless_never_imports_opentelemetry() -> None:
    # Every module but the integration imported with opentelemetry unimportable.
    script = """
import importlib, pkgutil, sys
sys.modules["opentelemetry"] = None
import django
django.setup()
import django_qless
skip = ("django_qless.integrations.", "django_qless.migrations")
names = [m.name for m in pkgutil.walk_packages(django_qless.__path__, "django_qless.")
         if not m.name.startswith(skip)]
for name in names:
    importlib.import_module(name)
assert "django_qless.worker.runner" in sys.modules, names
print(sorted(n for n in sys.modules if n.startswith("opentelemetry")))
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['opentelemetry']"  # the blocked entry, nothing else
