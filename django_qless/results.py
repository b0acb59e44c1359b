"""Job results without Django's Tasks API: status, stored return value, one error per attempt.

The worker stores a return value in the job data's ``"result"`` key when it completes the
job (Tasks tasks always; `@qless_job` jobs with `store_result=True` or
`QLESS['STORE_RESULTS']`), so the value lives exactly as long as qless keeps the completed
job. qless keeps only the latest failure of a job, so before every `fail` or `retry` the
worker appends a `task-error` history entry (`record_error`): the errors of earlier
attempts survive a retry. `django_qless.tasks` reads the same data into Django's
`TaskResult`; `JobDefinition.result()` reads it into a `JobResult`.
"""

from __future__ import annotations

import enum
import json
import re
import sys
import threading
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .connection import get_client
from .core import validation
from .exceptions import JobDataError, QlessError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from .core import Failure, HistoryEntry, Job

RESULT_KEY = "result"
#: `what` of the history entries `record_error` writes.
ERROR_EVENT = "task-error"
#: Class path given to a qless-written failure (retries exhausted by lost leases).
LEASE_LOST_PATH = "django_qless.core.exceptions.LockLostError"
#: Class path of a failure whose traceback names no exception.
UNKNOWN_PATH = "builtins.Exception"
#: Results kept by immediate mode (`QLESS['IMMEDIATE']`), per process, newest last.
IMMEDIATE_RESULTS = 1000
#: Stands for "no return value kept" (None is a value).
NOTHING: Any = object()
_EXCEPTION_LINE = re.compile(r"([A-Za-z_][\w.]*)(?::|$)")
_TRACEBACK_HEADER = "Traceback (most recent call last):"  # also ends "Exception Group ..."
_WRAPPER = len(json.dumps({RESULT_KEY: None}, separators=(",", ":"))) - len("null")


class ResultNotStorableError(ValueError):
    """A return value is not JSON that round-trips, or is over the size limit."""


# Named as Django's TaskResultDoesNotExist.
class ResultDoesNotExist(QlessError, LookupError):  # noqa: N818
    """No job of this definition has that jid (never enqueued, or expired from Redis)."""


class JobStatus(str, enum.Enum):
    """A job's status, named as Django's `TaskResultStatus`."""

    READY = "READY"
    RUNNING = "RUNNING"
    SUCCESSFUL = "SUCCESSFUL"
    FAILED = "FAILED"


#: qless state -> status (a job retried after a failure is waiting, so READY again).
STATUS_BY_STATE = {
    "waiting": JobStatus.READY,
    "scheduled": JobStatus.READY,
    "depends": JobStatus.READY,
    "stalled": JobStatus.READY,
    "running": JobStatus.RUNNING,
    "complete": JobStatus.SUCCESSFUL,
    "failed": JobStatus.FAILED,
}


@dataclass(frozen=True)
class JobError:
    """One failed attempt: the exception's class path and its formatted traceback."""

    exception_class_path: str
    traceback: str


@dataclass(frozen=True)
class JobResult:
    """What `JobDefinition.result(jid)` returns."""

    jid: str
    status: JobStatus
    value: Any = None
    errors: tuple[JobError, ...] = ()


def exception_path(exc: BaseException | type[BaseException]) -> str:
    """`module.QualName` of an exception or its class (what `TaskError` imports back)."""
    cls = exc if isinstance(exc, type) else type(exc)
    return f"{cls.__module__}.{cls.__qualname__}"


def encode_value(value: Any, limit: int, setting: str) -> Any:
    """The value as stored (tuples become lists), or `ResultNotStorableError` naming `setting`.

    NaN, non-string keys and other types are refused, as for job arguments, and so are
    values whose JSON is over `limit` bytes.
    """
    try:
        text = validation.encode_data({RESULT_KEY: value}, sys.maxsize)
    except (JobDataError, RecursionError) as exc:
        raise ResultNotStorableError(f"return value is not JSON: {exc}") from exc
    size = len(text.encode("utf-8")) - _WRAPPER
    if size > limit:
        raise ResultNotStorableError(
            f"return value is {size} bytes as JSON, over the limit of {limit} ({setting})"
        )
    return json.loads(text)[RESULT_KEY]


def read_value(data: Mapping[str, Any]) -> Any:
    """The stored return value (None when the job completed without one)."""
    return data.get(RESULT_KEY)


def record_error(job: Job, exc: BaseException, traceback: str) -> None:
    """Append one failed attempt to the job's history (the worker calls this per failure)."""
    # Escaped like the failure message: an exception's text may hold a lone surrogate.
    job.log(ERROR_EVENT, {"exception_class_path": exception_path(exc),
                          "traceback": validation.text(traceback, "traceback")})


def job_errors(job: Job) -> list[JobError]:
    """Every failed attempt of a job, oldest first.

    The recorded entries, plus the job's `failure` when no entry holds its message: one
    written by a worker that does not record errors, or by qless itself when a job
    exhausts its retries after lost leases.
    """
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


def _from_entry(entry: HistoryEntry) -> JobError:
    """A `JobError` from a `task-error` history entry."""
    traceback = str(entry.extra.get("traceback", ""))
    path = entry.extra.get("exception_class_path") or path_from_traceback(traceback)
    return JobError(exception_class_path=str(path or UNKNOWN_PATH), traceback=traceback)


def _from_failure(failure: Failure) -> JobError:
    """A `JobError` from the job's `failure` field."""
    path = path_from_traceback(failure.message)
    if path is None:
        path = LEASE_LOST_PATH if failure.group.startswith("failed-retries-") else UNKNOWN_PATH
    return JobError(exception_class_path=path, traceback=failure.message)


def find_result(klass: str, jid: str, aliases: Iterable[str]) -> JobResult:
    """The result of a job of `klass`: kept by immediate mode, else read on `aliases`.

    `ResultDoesNotExist` when neither holds a job of that klass with that jid.
    """
    kept = immediate_results.get(jid)
    if kept is not None and kept[0] == klass:
        return kept[1]
    try:
        validation.jid(jid)
    except QlessError as exc:
        raise ResultDoesNotExist(f"{jid!r} is not a jid") from exc
    for alias in dict.fromkeys(aliases):
        job = get_client(alias).get_job(jid)
        if job is not None and job.klass == klass:
            return result_of(job)
    raise ResultDoesNotExist(f"no job {klass!r} with jid {jid!r}")


def result_of(job: Job) -> JobResult:
    """A job read back as a `JobResult` (the value only once it completed)."""
    status = STATUS_BY_STATE.get(job.state, JobStatus.READY)
    value = None
    if status is JobStatus.SUCCESSFUL:
        try:
            value = read_value(job.data)
        except JobDataError:
            value = None
    return JobResult(job.jid, status, value, tuple(job_errors(job)))


class ImmediateResults:
    """Results of jobs run inline in immediate mode: process-local, the newest kept."""

    def __init__(self, size: int = IMMEDIATE_RESULTS) -> None:
        self.size = size
        self._results: OrderedDict[str, tuple[str, JobResult]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, klass: str, result: JobResult) -> None:
        """Remember a job's result, forgetting the oldest beyond `size`."""
        with self._lock:
            self._results[result.jid] = (klass, result)
            self._results.move_to_end(result.jid)
            while len(self._results) > self.size:
                self._results.popitem(last=False)

    def failed(self, klass: str, jid: str, exc: BaseException) -> None:
        """Remember that an inline job raised `exc`."""
        error = JobError(exception_path(exc), "".join(traceback.format_exception(exc)))
        self.keep(klass, JobResult(jid, JobStatus.FAILED, errors=(error,)))

    def get(self, jid: str) -> tuple[str, JobResult] | None:
        """`(klass, result)` of an inline job, if still kept."""
        with self._lock:
            return self._results.get(jid)

    def clear(self) -> None:
        """Forget every result (tests)."""
        with self._lock:
            self._results.clear()


immediate_results = ImmediateResults()
