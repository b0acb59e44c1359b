"""A qless job read back as Django's `TaskResult`: status, timings, workers, errors, value.

qless state -> status: waiting, scheduled, depends and stalled are READY (a job retried
after a failure is waiting again, so READY, its earlier errors kept); running is RUNNING;
complete is SUCCESSFUL; failed is FAILED. Times come from the job's history (whole
seconds): `enqueued_at` the first `put`, `started_at` the first `popped`,
`last_attempted_at` the latest `popped`, `finished_at` the latest `done` or `failed` of a
finished job. Each `popped` entry is one attempt, so `worker_ids` has one worker per attempt.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from django.conf import settings

from ..results import STATUS_BY_STATE as JOB_STATUS_BY_STATE
from .compat import InvalidTask, Task, TaskResult, TaskResultStatus
from .errors import errors_of
from .payload import read_call, read_result, run_after_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..core import HistoryEntry, Job

#: qless state -> Django's status (the same mapping as `JobDefinition.result`'s).
STATUS_BY_STATE = {
    state: TaskResultStatus[status.name] for state, status in JOB_STATUS_BY_STATE.items()
}
_FINISHED = {TaskResultStatus.SUCCESSFUL: "done", TaskResultStatus.FAILED: "failed"}


def as_datetime(when: float) -> datetime:
    """Epoch seconds as Django expects them: aware UTC with `USE_TZ`, naive local without."""
    if settings.USE_TZ:
        return datetime.fromtimestamp(when, tz=timezone.utc)
    return datetime.fromtimestamp(when)


def build_result(job: Job, task: Task[Any, Any], backend: str) -> TaskResult[Any]:
    """The `TaskResult` of a task's job (its data must be this backend's call shape)."""
    data = job.data
    args, kwargs, marker = read_call(data)
    status = STATUS_BY_STATE.get(job.state, TaskResultStatus.READY)
    popped = [entry for entry in job.history if entry.what == "popped"]
    result: TaskResult[Any] = TaskResult(
        task=_as_enqueued(task, job, marker, backend),
        id=job.jid,
        status=status,
        enqueued_at=_first(e.when for e in job.history if e.what == "put"),
        started_at=_first(e.when for e in popped),
        finished_at=_finished_at(job.history, status),
        last_attempted_at=_first(e.when for e in reversed(popped)),
        args=args,
        kwargs=kwargs,
        backend=backend,
        errors=errors_of(job),
        worker_ids=[entry.worker or "" for entry in popped],
    )
    if status == TaskResultStatus.SUCCESSFUL:
        # Django's dataclass is frozen; its own backends set the value the same way.
        object.__setattr__(result, "_return_value", read_result(data))
    return result


def _as_enqueued(
    task: Task[Any, Any], job: Job, marker: Mapping[str, Any], backend: str
) -> Task[Any, Any]:
    """The task with the backend, queue, priority and run_after of its job, where valid."""
    # A completed job has no queue any more; its last `put` names the queue it ran in.
    puts = [entry.queue for entry in job.history if entry.what == "put" and entry.queue]
    try:
        return task.using(
            backend=backend,
            queue_name=job.queue_name or (puts[-1] if puts else None),
            priority=int(job.priority),
            run_after=run_after_of(marker),
        )
    except InvalidTask:
        # Moved to a queue or given a priority the backend would refuse (the admin can).
        return task


def _first(whens: Iterable[int]) -> datetime | None:
    """The first of some history times, as a datetime."""
    return next((as_datetime(when) for when in whens), None)


def _finished_at(history: tuple[HistoryEntry, ...], status: TaskResultStatus) -> datetime | None:
    """When a finished job last completed or failed; None while it is not finished."""
    what = _FINISHED.get(status)
    return _first(e.when for e in reversed(history) if what is not None and e.what == what)
