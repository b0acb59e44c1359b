"""A task's errors: one `TaskError` per failed attempt, read from the job's history.

qless keeps only the latest failure in the job (`failure`, replaced by every `fail` or
`retry`), so the worker records each failed attempt of a Tasks task as a history entry
(`record_error`, a qless `log` named `task-error` carrying the exception's class path and
traceback). Reading merges those entries with the job's `failure`, which is added when no
entry holds its message: a failure written by a worker that does not record errors, or by
qless itself when a job exhausts its retries after lost leases.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .compat import TaskError

if TYPE_CHECKING:
    from ..core import Failure, HistoryEntry, Job

#: `what` of the history entries `record_error` writes.
ERROR_EVENT = "task-error"
#: Class path given to a qless-written failure (retries exhausted by lost leases).
LEASE_LOST_PATH = "django_qless.core.exceptions.LockLostError"
#: Class path of a failure whose traceback names no exception.
UNKNOWN_PATH = "builtins.Exception"
_EXCEPTION_LINE = re.compile(r"([A-Za-z_][\w.]*)(?::|$)")
_TRACEBACK_HEADER = "Traceback (most recent call last):"  # also ends "Exception Group ..."


def exception_path(exc: BaseException | type[BaseException]) -> str:
    """`module.QualName` of an exception or its class (what `TaskError` imports back)."""
    cls = exc if isinstance(exc, type) else type(exc)
    return f"{cls.__module__}.{cls.__qualname__}"


def record_error(job: Job, exc: BaseException, traceback: str) -> None:
    """Append one failed attempt to the job's history (the worker calls this per failure)."""
    job.log(ERROR_EVENT, {"exception_class_path": exception_path(exc), "traceback": traceback})


def errors_of(job: Job) -> list[TaskError]:
    """Every failed attempt of a job, oldest first."""
    errors = [_from_entry(entry) for entry in job.history if entry.what == ERROR_EVENT]
    failure = job.failure
    if failure is not None and not any(e.traceback == failure.message for e in errors):
        errors.append(_from_failure(failure))
    return errors


def path_from_traceback(text: str) -> str | None:
    """The class path named by a formatted traceback's exception line, if it names one.

    The line read is the first unindented one after the last traceback header (a message
    may span lines, chained exceptions come earlier); builtins are printed bare.
    """
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if line.endswith(_TRACEBACK_HEADER)]
    for line in lines[headers[-1] + 1 if headers else 0:]:
        if not line or line[0].isspace() or line.startswith("[... "):
            continue  # frames and source lines are indented; "[... cut ...]" is truncation
        match = _EXCEPTION_LINE.match(line)
        if match is None:
            return None
        name = match.group(1)
        return name if "." in name else f"builtins.{name}"
    return None


def _from_entry(entry: HistoryEntry) -> TaskError:
    """A `TaskError` from a `task-error` history entry."""
    traceback = str(entry.extra.get("traceback", ""))
    path = entry.extra.get("exception_class_path") or path_from_traceback(traceback)
    return TaskError(exception_class_path=str(path or UNKNOWN_PATH), traceback=traceback)


def _from_failure(failure: Failure) -> TaskError:
    """A `TaskError` from the job's `failure` field."""
    path = path_from_traceback(failure.message)
    if path is None:
        path = LEASE_LOST_PATH if failure.group.startswith("failed-retries-") else UNKNOWN_PATH
    return TaskError(exception_class_path=path, traceback=failure.message)
