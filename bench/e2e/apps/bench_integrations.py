"""Sentry or OpenTelemetry set up as a project would, for bench/integrations.py.

$BENCH_INTEGRATION names the set-up (`MODES`); the bench app's settings call `setup()` as a
project's settings module calls `sentry_sdk.init`. Nothing leaves the process: Sentry's
envelopes and OpenTelemetry's spans are built, batched and dropped by the last step.
`request_span()` is what a web request holds open while it enqueues (a transaction, a
server span), so the enqueue hooks have a trace to carry.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

#: Each set-up by name, and what it is.
MODES = {
    "absent": "neither initialised (nothing of them is imported)",
    "sentry": "sentry-sdk with QlessIntegration, no traces_sample_rate (errors only)",
    "sentry_all": "sentry-sdk with QlessIntegration, traces_sample_rate=1.0",
    "otel": "QlessInstrumentor on a TracerProvider sampling nothing (ALWAYS_OFF)",
    "otel_all": "QlessInstrumentor on a TracerProvider sampling every span (ALWAYS_ON)",
}

_tracer: Any = None


def mode() -> str:
    """The set-up this process runs with ("absent" unless $BENCH_INTEGRATION names one)."""
    chosen = os.environ.get("BENCH_INTEGRATION", "absent")
    if chosen not in MODES:
        raise SystemExit(f"unknown BENCH_INTEGRATION {chosen!r}; one of {', '.join(MODES)}")
    return chosen


def setup() -> None:
    """Initialise this process's integration, if any."""
    chosen = mode()
    if chosen.startswith("sentry"):
        _sentry(1.0 if chosen == "sentry_all" else 0.0)
    elif chosen.startswith("otel"):
        _otel(chosen == "otel_all")


def request_span() -> AbstractContextManager[Any]:
    """A span open as in a web request's handler (nothing when no integration is set up)."""
    chosen = mode()
    if chosen.startswith("sentry"):
        import sentry_sdk  # noqa: PLC0415 - only in the Sentry set-ups

        return sentry_sdk.start_transaction(op="http.server", name="bench request")
    if chosen.startswith("otel"):
        return _tracer.start_as_current_span("bench request")
    return nullcontext()


def _sentry(sample_rate: float) -> None:
    """`sentry_sdk.init` with the Django and qless integrations, sending nothing."""
    import sentry_sdk  # noqa: PLC0415
    from sentry_sdk.integrations.django import DjangoIntegration  # noqa: PLC0415
    from sentry_sdk.transport import Transport  # noqa: PLC0415

    from django_qless.integrations.sentry import QlessIntegration  # noqa: PLC0415

    class Dropped(Transport):
        """Takes each envelope as the HTTP transport would, then drops it."""

        def capture_envelope(self, envelope: Any) -> None:
            envelope.serialize()  # what the HTTP transport does before it sends

    sentry_sdk.init(dsn="http://public@127.0.0.1:9/1", transport=Dropped,
                    traces_sample_rate=sample_rate or None,
                    integrations=[DjangoIntegration(), QlessIntegration()])


def _otel(sample_all: bool) -> None:
    """A TracerProvider with a batch processor whose exporter drops, instrumented."""
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import (  # noqa: PLC0415
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON  # noqa: PLC0415

    from django_qless.integrations.opentelemetry import QlessInstrumentor  # noqa: PLC0415

    class Dropped(SpanExporter):
        """Takes each batch of spans as an exporter would, then drops it."""

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            for span in spans:
                span.to_json()  # about what an exporter's encoding costs
            return SpanExportResult.SUCCESS

    global _tracer
    provider = TracerProvider(sampler=ALWAYS_ON if sample_all else ALWAYS_OFF)
    provider.add_span_processor(BatchSpanProcessor(Dropped()))
    QlessInstrumentor().instrument(tracer_provider=provider)
    _tracer = provider.get_tracer("bench")
