"""The `QlessIntegration` class and the hooks it adds, each a no-op while it is not enabled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import sentry_sdk
from sentry_sdk.integrations import Integration
from sentry_sdk.scope import add_global_event_processor

from ...core.hooks import (
    JobRun,
    PendingJob,
    add_enqueue_hook,
    add_run_hook,
    remove_enqueue_hook,
    remove_run_hook,
)
from . import duplicates, propagation, running
from .crons import CronOptions


class QlessIntegration(Integration):
    """Scopes, transactions, failures and Crons check-ins of qless jobs in Sentry."""

    identifier = "qless"
    origin = f"auto.queue.{identifier}"

    def __init__(self, monitor_schedules: bool = False,
                 exclude_schedules: Iterable[str] | None = None) -> None:
        #: Which recurring schedules send Crons check-ins (none unless asked for).
        self.crons = CronOptions(monitor_schedules, tuple(exclude_schedules or ()))

    @staticmethod
    def setup_once() -> None:
        """Add the hooks and the log filter for this process (they check the client)."""
        add_hooks()
        add_global_event_processor(_drop_duplicates)


def add_hooks() -> None:
    """Add the enqueue and run hooks to this process (once, however often called)."""
    add_enqueue_hook(_enqueue_hook)
    add_run_hook(_run_hook)


def remove_hooks() -> None:
    """Take the hooks away (for tests that start and drop Sentry clients)."""
    remove_enqueue_hook(_enqueue_hook)
    remove_run_hook(_run_hook)


def enabled() -> QlessIntegration | None:
    """The integration of the current client, or None when it is not enabled."""
    return sentry_sdk.get_client().get_integration(QlessIntegration)


def _enqueue_hook(job: PendingJob) -> Mapping[str, Any] | None:
    """The trace context the job carries to the worker (nothing while not enabled)."""
    return None if enabled() is None else propagation.entries()


def _run_hook(run: JobRun) -> AbstractContextManager[Any]:
    """The job's own scope and transaction (nothing while not enabled)."""
    integration = enabled()
    if integration is None:
        return contextlib.nullcontext()
    return running.job_scope(run, integration.crons, QlessIntegration.origin)


def _drop_duplicates(event: Any, hint: Any) -> Any:
    """No event from a log line reporting a failure this integration captured."""
    if enabled() is None or not isinstance(hint, dict):
        return event
    return None if duplicates.reported_by_log_line(hint) else event
