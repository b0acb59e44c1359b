"""The job's context on its events: what ran, which attempt, and its data, masked.

The data (arguments, and what else the job carries, its metadata aside) is masked by the
rule of the admin pages (`QLESS["ADMIN"]["MASKED_DATA_KEYS"]` and `["MASKED_PATTERNS"]`),
so a secret hidden there is hidden in Sentry too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sentry_sdk.utils import capture_internal_exceptions

from ...core.hooks import META_KEY, JobRun

#: The name of the context on the job's events.
CONTEXT = "qless job"


def job_processor(run: JobRun) -> Callable[[Any, Any], Any]:
    """An event processor adding the job's context to each event of its scope."""

    def add_job(event: Any, hint: Any) -> Any:
        with capture_internal_exceptions():
            event.setdefault("contexts", {})[CONTEXT] = job_context(run)
        return event

    return add_job


def job_context(run: JobRun) -> dict[str, Any]:
    """The job as its events describe it."""
    return {"jid": run.jid, "klass": run.klass, "queue": run.queue, "attempt": run.attempt,
            "retries": run.retries, "remaining": run.remaining, "worker": run.worker,
            "data": masked({key: value for key, value in run.data.items()
                            if key != META_KEY})}


def masked(data: dict[str, Any]) -> Any:
    """Job data with the values the admin masks masked."""
    # Imported when an event is sent (in the worker): the masking reads Django settings.
    from ...admin.masking import masker  # noqa: PLC0415

    return masker().data(data)
