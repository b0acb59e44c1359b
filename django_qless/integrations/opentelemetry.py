"""OpenTelemetry tracing of qless jobs: a PRODUCER span per put, a CONSUMER span per run.

Call `QlessInstrumentor().instrument()` once per process (the web process and each
worker). The spans follow the messaging semantic conventions (v1.44.0; the attributes
used here are unchanged since v1.26.0). The trace context of the PRODUCER span travels
in the job's metadata under `"otel"`, written by the global propagator, so the run
continues the enqueuer's trace, whichever process puts the job and however late.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from contextvars import Token
from types import TracebackType
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from .. import __version__
from ..hooks import (
    JobRun,
    PendingJob,
    add_enqueue_hook,
    add_run_hook,
    in_job_child,
    remove_enqueue_hook,
    remove_run_hook,
)

#: The metadata key of the carried trace context (a dict of the propagator's fields).
META_ENTRY = "otel"
SYSTEM = "qless"
SCHEMA_URL = "https://opentelemetry.io/schemas/1.44.0"

SYSTEM_KEY = "messaging.system"
DESTINATION = "messaging.destination.name"
MESSAGE_ID = "messaging.message.id"
OPERATION_TYPE = "messaging.operation.type"
OPERATION_NAME = "messaging.operation.name"
CLIENT_ID = "messaging.client.id"
KLASS = "messaging.qless.klass"
ATTEMPT = "messaging.qless.attempt"
RETRIES = "messaging.qless.retries"
#: How long a job's child waits for its spans to be exported before it exits.
FLUSH_MILLIS = 5000


class QlessInstrumentor(BaseInstrumentor):  # type: ignore[misc]  # its base is untyped
    """Traces every job this process enqueues and runs, through django_qless's hooks."""

    def instrumentation_dependencies(self) -> Collection[str]:
        """Nothing to check: the instrumented code is django_qless itself."""
        return ()

    def _instrument(self, **kwargs: Any) -> None:
        """Add the hooks; `tracer_provider` (else the global one), `use_span_links`."""
        provider: trace.TracerProvider | None = kwargs.get("tracer_provider")
        # Without one, the global provider's proxy: a provider set later is used too.
        tracer = trace.get_tracer(__name__, __version__, provider, schema_url=SCHEMA_URL)
        self._hooks = Hooks(tracer, provider, links=bool(kwargs.get("use_span_links", False)))
        add_enqueue_hook(self._hooks.send)
        add_run_hook(self._hooks.process)

    def _uninstrument(self, **kwargs: Any) -> None:
        """Remove the hooks."""
        remove_enqueue_hook(self._hooks.send)
        remove_run_hook(self._hooks.process)


class Hooks:
    """The enqueue hook and the run hook of one instrumentation, with its tracer."""

    def __init__(self, tracer: trace.Tracer, provider: trace.TracerProvider | None, *,
                 links: bool) -> None:
        self.tracer = tracer
        self.provider = provider
        self.links = links

    def send(self, job: PendingJob) -> Mapping[str, Any] | None:
        """The PRODUCER span of one put, ended at once; its context is the job's entry."""
        span = self.tracer.start_span(
            f"send {job.queue}", kind=SpanKind.PRODUCER,
            attributes={**_common(job.jid, job.queue, "send"), KLASS: job.klass})
        carrier: dict[str, str] = {}
        try:
            propagate.inject(carrier, context=trace.set_span_in_context(span))
        finally:
            span.end()
        return {META_ENTRY: carrier} if carrier else None

    def process(self, run: JobRun) -> Processing:
        """The CONSUMER span wrapped around one run."""
        return Processing(self, run)


class Processing:
    """A run's CONSUMER span, current while the job runs, its failure recorded."""

    def __init__(self, hooks: Hooks, run: JobRun) -> None:
        self.hooks = hooks
        self.run = run
        self.span: trace.Span = trace.INVALID_SPAN
        self.token: Token[context.Context] | None = None

    def __enter__(self) -> trace.Span:
        run = self.run
        carried = run.metadata.get(META_ENTRY)
        sent = propagate.extract(carried if isinstance(carried, Mapping) else {})
        attributes: dict[str, str | int] = {
            **_common(run.jid, run.queue, "process"), KLASS: run.klass, ATTEMPT: run.attempt,
            RETRIES: run.retries, CLIENT_ID: run.worker}
        parent, links = sent, None
        if self.hooks.links:
            # A trace of its own, linked to the put (as Celery's use_span_links does).
            producer = trace.get_current_span(sent).get_span_context()
            parent = trace.set_span_in_context(trace.INVALID_SPAN, sent)  # baggage kept
            links = [Link(producer)] if producer.is_valid else None
        self.span = self.hooks.tracer.start_span(
            f"process {run.queue}", parent, SpanKind.CONSUMER, attributes, links)
        # Attached with the extracted context, so its baggage is current in the job too.
        self.token = context.attach(trace.set_span_in_context(self.span, parent))
        return self.span

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            if exc is not None and self.span.is_recording():
                self.span.record_exception(exc)
                self.span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            self.span.end()
            if in_job_child():
                # The child leaves by os._exit: a batch processor's spans would die with it.
                provider = self.hooks.provider or trace.get_tracer_provider()
                flush = getattr(provider, "force_flush", None)
                if flush is not None:
                    flush(FLUSH_MILLIS)
        finally:
            if self.token is not None:
                context.detach(self.token)


def _common(jid: str, queue: str, operation: str) -> dict[str, str]:
    """The messaging attributes both spans carry."""
    return {SYSTEM_KEY: SYSTEM, DESTINATION: queue, MESSAGE_ID: jid,
            OPERATION_TYPE: operation, OPERATION_NAME: operation}
