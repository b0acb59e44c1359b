"""What the OpenTelemetry tests share: the SDK set up in memory, the jobs they run."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from django_qless import qless_job
from django_qless.core import Job
from django_qless.integrations.opentelemetry import QlessInstrumentor
from django_qless.retry import RetryPolicy

QUEUE = "otel"
#: (trace id, span id) of the span current inside each job, by jid.
SEEN: dict[str, tuple[int, int]] = {}


def note(jid: str) -> None:
    """Keep the span the job runs in."""
    found = trace.get_current_span().get_span_context()
    SEEN[jid] = (found.trace_id, found.span_id)


@qless_job(name="otel.work", queue=QUEUE, takes_job=True)
def work(job: Job, pause: float = 0.0, fail: bool = False) -> None:
    """Notes its span; pauses so concurrent jobs overlap; fails when asked."""
    time.sleep(pause)
    note(job.jid)
    if fail:
        raise ValueError("boom")


@qless_job(name="otel.awork", queue=QUEUE, takes_job=True)
async def awork(job: Job, pause: float = 0.0) -> None:
    """The same on the worker's event loop."""
    await asyncio.sleep(pause)
    note(job.jid)


@qless_job(name="otel.flaky", queue=QUEUE, takes_job=True, retries=1,
           retry_policy=RetryPolicy(backoff=0, jitter=0, retry_on=(ValueError,)))
def flaky(job: Job) -> None:
    """Fails its first attempt (retried at once), succeeds on the second."""
    note(job.jid)
    if job.attempt == 1:
        raise ValueError("first attempt")


@dataclass
class Traced:
    """The in-memory SDK behind one instrumentation, and the spans it finished."""

    provider: TracerProvider
    exporter: InMemorySpanExporter

    @property
    def tracer(self) -> trace.Tracer:
        """A tracer of the tests' own (a request's span, a sweeper's)."""
        return self.provider.get_tracer("tests")

    def spans(self, kind: SpanKind) -> list[ReadableSpan]:
        """The finished spans of one kind, in the order they ended."""
        return [span for span in self.exporter.get_finished_spans() if span.kind == kind]

    def by_jid(self, kind: SpanKind) -> dict[str, list[ReadableSpan]]:
        """The spans of one kind, by the jid they carry."""
        found: dict[str, list[ReadableSpan]] = {}
        for span in self.spans(kind):
            attributes = span.attributes or {}
            found.setdefault(str(attributes["messaging.message.id"]), []).append(span)
        return found

    def pairs(self) -> dict[str, tuple[ReadableSpan, ReadableSpan]]:
        """Each job's one PRODUCER and one CONSUMER span (asserted one of each)."""
        sent, ran = self.by_jid(SpanKind.PRODUCER), self.by_jid(SpanKind.CONSUMER)
        assert set(sent) == set(ran), (sorted(sent), sorted(ran))
        for jid in sent:
            assert len(sent[jid]) == 1 and len(ran[jid]) == 1, jid
        return {jid: (sent[jid][0], ran[jid][0]) for jid in sent}


class FileExporter(SpanExporter):
    """Writes each span as a JSON line: spans a job's child process exported are read back."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self.path.open("a") as out:
            for span in spans:
                out.write(json.dumps({
                    "name": span.name, "kind": span.kind.name, "pid": os.getpid(),
                    "jid": dict(span.attributes or {}).get("messaging.message.id"),
                    "trace_id": span.context.trace_id, "status": span.status.status_code.name,
                }) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to close."""


def exported(path: Path) -> list[dict[str, Any]]:
    """What a `FileExporter` wrote."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@contextmanager
def tracing(processor: SpanProcessor | None = None, sampler: Sampler | None = None,
            **options: Any) -> Iterator[Traced]:
    """Instrumented with an in-memory provider (never the global one, which is set once per
    process) and the W3C propagators as the global text map; all undone after."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if processor is not None:
        provider.add_span_processor(processor)
    previous = propagate.get_global_textmap()
    propagate.set_global_textmap(CompositePropagator(
        [TraceContextTextMapPropagator(), W3CBaggagePropagator()]))
    instrumentor = QlessInstrumentor()
    instrumentor.instrument(tracer_provider=provider, **options)
    SEEN.clear()
    try:
        yield Traced(provider, exporter)
    finally:
        instrumentor.uninstrument()
        propagate.set_global_textmap(previous)
        provider.shutdown()
