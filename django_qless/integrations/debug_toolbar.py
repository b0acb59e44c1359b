"""A django-debug-toolbar panel listing the `@qless_job` jobs a request enqueued.

Add `"django_qless.integrations.debug_toolbar.QlessJobsPanel"` to `DEBUG_TOOLBAR_PANELS`.
Django tasks sent to `QlessBackend` are left to the toolbar's own Tasks panel.
"""

from __future__ import annotations

from contextvars import Token
from datetime import datetime, timezone
from typing import Any

from debug_toolbar.panels import Panel
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse

from . import request_jobs
from .request_jobs import RecordedJob, Recording

ROUTES = {
    "now": "put now",
    "immediate": "immediate mode",
    "on_commit": "on commit",
    "outbox": "outbox, on commit",
}


class QlessJobsPanel(Panel):
    """The jobs enqueued during the request: klass, queue, admin link, timing, put or not."""

    title = "qless jobs"
    nav_title = "qless jobs"
    template = "django_qless/debug_toolbar_panel.html"
    # The recording is a context variable, which follows an ASGI request into its views.
    is_async = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._jobs = Recording()
        self._token: Token[Recording | None] | None = None

    @property
    def nav_subtitle(self) -> str:
        """How many jobs were enqueued."""
        stats: dict[str, Any] = self.get_stats()  # type: ignore[no-untyped-call]
        count: int = stats.get("count", 0)
        return f"{count} job{'' if count == 1 else 's'}"

    def enable_instrumentation(self) -> None:
        """Start recording this request's enqueues."""
        if self._token is None:
            self._jobs, self._token = request_jobs.start()

    def disable_instrumentation(self) -> None:
        """Stop recording; the enqueue path has no listener left once no request records."""
        if self._token is not None:
            request_jobs.stop(self._token)
            self._token = None

    def generate_stats(self, request: HttpRequest, response: HttpResponse) -> None:
        """Store the recorded jobs as plain values (the toolbar's store keeps JSON)."""
        jobs = self._jobs
        self.record_stats({  # type: ignore[no-untyped-call]  # the toolbar's API is untyped
            "jobs": [_row(job) for job in jobs.jobs],
            "count": len(jobs.jobs) + jobs.omitted,
            "omitted": jobs.omitted,
        })


def _row(job: RecordedJob) -> dict[str, Any]:
    """One job as the template shows it."""
    deferred = job.route in ("on_commit", "outbox")
    return {
        "jid": job.jid, "klass": job.klass, "queue": job.queue, "connection": job.connection,
        "url": _job_url(job.connection, job.jid), "route": ROUTES[job.route],
        "deferred": deferred, "bulk": job.bulk, "delay": job.delay,
        "not_before": None if job.not_before is None else _clock(job.not_before),
        "priority": job.priority, "tags": list(job.tags or ()), "put": _put(job, deferred),
    }


def _put(job: RecordedJob, deferred: bool) -> str:
    """Whether and when the job reached Redis during the request."""
    if job.put_at is not None:
        if job.inline:
            return "ran inline"
        after = f", {(job.put_at - job.enqueued_at) * 1000:.0f} ms after" if deferred else ""
        return f"put at {_clock(job.put_at)}{after}"
    if deferred:
        # Rolled back, a unique job that existed, or a failed put the outbox sweep retries.
        return "not put during the request"
    return "not created: a unique job existed"


def _job_url(connection: str, jid: str) -> str | None:
    """The job's page in the admin (None when the admin does not serve django_qless)."""
    try:
        return reverse(f"{admin.site.name}:django_qless_job",
                       kwargs={"alias": connection, "jid": jid})
    except NoReverseMatch:
        return None


def _clock(epoch: float) -> str:
    """Epoch seconds as a UTC time of day, to the millisecond."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
