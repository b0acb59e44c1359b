"""A Tasks task run by `qless_worker`: its backend's options, context, result and signals.

`task_started` is sent just before the function runs, with a RUNNING result; `task_finished`
once qless has the job's final word, SUCCESSFUL (with the stored return value) or FAILED
(with this attempt's error), as Django's own backends send them. A task raising
`RetryJob` is retried and is READY again: no `task_finished` then. Both go through
`django_qless.signals.send`: a receiver's error is logged, never raised into the worker.
"""

from __future__ import annotations

import dataclasses
import traceback
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from .. import signals
from ..coroutines import invoke
from ..exceptions import JobDataError
from .backend import QlessBackend
from .compat import (
    Task,
    TaskError,
    TaskResult,
    TaskResultStatus,
    task_backends,
    task_finished,
    task_started,
)
from .errors import exception_path
from .payload import TASK_KEY, encode_result, is_task_data
from .resolve import call_arguments, resolve_task
from .results import build_result

if TYPE_CHECKING:
    from ..core import Job
    from ..retry import RetryPolicy
    from ..worker.report import Outcome


def task_run(job: Job) -> TaskRun | None:
    """How the worker runs the task a job names, or None when it is no task of ours.

    Nothing is imported unless the job data is this backend's (the `task` marker) and
    names a `TASKS` alias configured with a `QlessBackend`; then `resolve_task` imports
    only inside installed apps.
    """
    try:
        data = job.data
    except JobDataError:
        return None
    if not is_task_data(data) or _qless_backend(data[TASK_KEY].get("backend")) is None:
        return None
    task = resolve_task(job.klass)
    if task is None:
        return None
    backend = _qless_backend(task.backend)
    return None if backend is None else TaskRun(task, backend)


def _qless_backend(alias: object) -> QlessBackend | None:
    """The `QlessBackend` configured under a `TASKS` alias, if that is what it is."""
    if not isinstance(alias, str):
        return None
    try:
        backend = task_backends[alias]
    except ImproperlyConfigured:  # an alias TASKS does not configure (or configures badly)
        return None
    return backend if isinstance(backend, QlessBackend) else None


class TaskRun:
    """One job of a Tasks task, from its call to its end."""

    retry_policy: RetryPolicy | None = None  # a failed task is failed (Django has no retries)

    def __init__(self, task: Task[Any, Any], backend: QlessBackend) -> None:
        self.task = task
        self.backend = backend
        self.time_limit = backend.time_limit
        self.heartbeat = backend.heartbeat
        self.result: TaskResult[Any] | None = None
        self.value: Any = None
        self.error: BaseException | None = None

    def call(self, job: Job) -> Any:
        """Send `task_started`, then call the task (with a `TaskContext` if it takes one)."""
        self.result = build_result(job, self.task, self.backend.alias)
        attempt = len(self.result.worker_ids)
        args, kwargs = call_arguments(self.task, job.data, attempt, job.client.worker_name,
                                      jid=job.jid)
        signals.send(task_started, type(self.backend), task_result=self.result)
        try:
            return invoke(self.task.func, args, kwargs)
        except BaseException as exc:
            self.error = exc
            raise

    def stored(self, value: Any) -> Any:
        """The return value as stored: Django-normalised JSON within `RESULT_MAX_BYTES`."""
        try:
            self.value = encode_result(value, self.backend.result_max_bytes)["result"]
        except BaseException as exc:
            self.error = exc
            raise
        return self.value

    def finished(self, outcome: Outcome) -> None:
        """Send `task_finished` when the job completed or failed for good."""
        result = self.result
        if result is None or outcome.value not in ("completed", "failed"):
            return
        errors = list(result.errors)
        if outcome.value == "completed":
            status = TaskResultStatus.SUCCESSFUL
        else:
            status = TaskResultStatus.FAILED
            if self.error is not None:
                errors.append(TaskError(
                    exception_class_path=exception_path(self.error),
                    traceback="".join(traceback.format_exception(self.error)),
                ))
        done = dataclasses.replace(result, status=status, finished_at=timezone.now(),
                                   errors=errors)
        if status == TaskResultStatus.SUCCESSFUL:
            # Django's dataclass is frozen; its own backends set the value the same way.
            object.__setattr__(done, "_return_value", self.value)
        signals.send(task_finished, type(self.backend), task_result=done)
