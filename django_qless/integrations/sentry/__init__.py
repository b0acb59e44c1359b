"""Sentry for qless jobs: `sentry_sdk.init(integrations=[QlessIntegration()])`.

Each job runs in its own isolation scope, as a `queue.process` transaction named after its
klass that continues the trace of the code that enqueued it; a failed attempt is captured
once, as an exception event tagged with the job; recurring schedules can send Crons
check-ins. Importing this module imports sentry_sdk: nothing else in django_qless does.
"""

from __future__ import annotations

from .supported import check_version

check_version()

from .integration import QlessIntegration  # noqa: E402 - only once the SDK is one it knows

__all__ = ["QlessIntegration"]
