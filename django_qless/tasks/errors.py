"""A task's errors: one `TaskError` per failed attempt, read from the job's history.

qless keeps only the latest failure in the job, so the worker records every failed
attempt as a history entry (`record_error`); `django_qless.results.job_errors` merges
those entries with the job's `failure`. This module gives them Django's `TaskError` shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..results import (
    ERROR_EVENT,
    LEASE_LOST_PATH,
    UNKNOWN_PATH,
    exception_path,
    job_errors,
    path_from_traceback,
    record_error,
)
from .compat import TaskError

if TYPE_CHECKING:
    from ..core import Job

__all__ = [
    "ERROR_EVENT",
    "LEASE_LOST_PATH",
    "UNKNOWN_PATH",
    "errors_of",
    "exception_path",
    "path_from_traceback",
    "record_error",
]


def errors_of(job: Job) -> list[TaskError]:
    """Every failed attempt of a job, oldest first."""
    return [
        TaskError(exception_class_path=error.exception_class_path, traceback=error.traceback)
        for error in job_errors(job)
    ]
