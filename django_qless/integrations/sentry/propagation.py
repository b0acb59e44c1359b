"""The trace context a job carries from where it is enqueued to the worker that runs it.

It is kept in the job's metadata under `TRACE_KEY`, as the two headers Sentry propagates
between services (`sentry-trace` and `baggage`), taken when the job is enqueued inside a
span (a request's transaction, a job's): that trace, also when the job is put after
commit, by the outbox sweep or in bulk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sentry_sdk
from sentry_sdk.tracing import BAGGAGE_HEADER_NAME, SENTRY_TRACE_HEADER_NAME

from ...core.hooks import JobRun

#: The metadata key of the trace headers (an object of its own, beside other hooks' keys).
TRACE_KEY = "sentry"


def entries() -> Mapping[str, Any] | None:
    """The current span's trace headers as metadata entries (None outside any span)."""
    if sentry_sdk.get_current_span() is None:
        # No request or job is being traced: a thread's own trace (the worker's monitor
        # putting cron slots, a script) would make all its jobs one trace.
        return None
    headers = {}
    traceparent = sentry_sdk.get_traceparent()
    if traceparent:
        headers[SENTRY_TRACE_HEADER_NAME] = traceparent
        baggage = sentry_sdk.get_baggage()
        if baggage:
            headers[BAGGAGE_HEADER_NAME] = baggage
    return {TRACE_KEY: headers} if headers else None


def headers_of(run: JobRun) -> dict[str, str]:
    """The trace headers a job was enqueued with ({}: it starts a trace of its own)."""
    found = run.metadata.get(TRACE_KEY)
    if not isinstance(found, Mapping):
        return {}
    # Only text reaches the SDK's parsers: the data may come from any qless client.
    return {name: value for name, value in found.items()
            if name in (SENTRY_TRACE_HEADER_NAME, BAGGAGE_HEADER_NAME)
            and isinstance(value, str)}
