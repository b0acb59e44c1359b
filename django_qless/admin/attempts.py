"""A job's attempts, read from its history: who ran it, when, for how long, how it ended.

qless writes `popped` when a worker takes a job, `done` when it completes, `failed` when it
fails (or when qless fails a job whose retries ran out), `timed-out` when a lease ends and
`put` when the job is queued again; a retry writes nothing. django_qless's worker adds a
`task-error` entry per failed attempt (class path and traceback) and `handed-back` when it
gives a job back unrun. So each `popped` starts an attempt and the entries after it, up to
the next `put` or `popped`, say how it ended. qless keeps only the latest failure message in
the job (`failure`); it is attached to the attempt it belongs to when the history lacks it.

A worker that dies (or is cut off) stops renewing its lease: the next pop after the lease
runs out writes `timed-out`, and one grace period later either hands the job to another
worker or, with no retry left, writes `failed` naming no worker. How long such an attempt
ran is not known (only that it ended by then), so it has no end time and no duration.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from ..core import Failure, HistoryEntry, Job
from ..results import ERROR_EVENT, path_from_traceback
from ..worker.report import HANDED_BACK
from . import masking
from .masking import Redaction
from .presenters import first_line, when


class Outcome(str, enum.Enum):
    """How one attempt ended."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    RETRIED = "retried"
    TIMED_OUT = "timed out"
    #: Its lease ran out and, with no retry left, qless failed the job.
    LEASE_EXPIRED = "lease expired"
    HANDED_BACK = "handed back"
    #: Queued again while it ran (moved, or retried by an operator).
    REQUEUED = "requeued"
    #: Popped again with no entry saying how the attempt before ended.
    UNREPORTED = "no outcome recorded"


#: Outcomes the job's latest failure may belong to.
FAILING = frozenset({Outcome.FAILED, Outcome.RETRIED, Outcome.TIMED_OUT, Outcome.LEASE_EXPIRED,
                     Outcome.UNREPORTED})


@dataclass(frozen=True)
class AttemptError:
    """Why an attempt failed: failure group and exception class path (when known), traceback."""

    group: str | None
    exception: str
    traceback: str

    @property
    def summary(self) -> str:
        """The traceback's telling line ("ValueError: boom")."""
        return first_line(self.traceback)


@dataclass(frozen=True)
class Attempt:
    """One run of a job by a worker."""

    number: int
    worker: str | None
    started: datetime | None
    ended: datetime | None
    outcome: Outcome
    error: AttemptError | None
    #: When qless found its lease ended (the lease ran out by then, or it was timed out).
    lease_ended: datetime | None = None
    #: When qless failed the job because the lease ran out with no retry left.
    exhausted: datetime | None = None

    @property
    def duration(self) -> float | None:
        """Seconds from start to end (whole seconds, as history keeps them), when both are known."""
        if self.started is None or self.ended is None:
            return None
        return (self.ended - self.started).total_seconds()


@dataclass
class _Draft:
    """An attempt while the history is read."""

    worker: str | None
    started: int | None
    ended: int | None = None
    outcome: Outcome | None = None
    error: AttemptError | None = None
    group: str | None = None
    lease_ended: int | None = None
    exhausted: int | None = None

    def end(self, outcome: Outcome, at: int) -> None:
        """Set the outcome; the first end entry sets the time (later ones refine the outcome)."""
        self.outcome = outcome
        self.ended = at if self.ended is None else self.ended


def _done(draft: _Draft, entry: HistoryEntry) -> None:
    """A completion ends the attempt at its own time (also after a lease notice)."""
    draft.outcome, draft.ended = Outcome.COMPLETED, entry.when


def _task_error(draft: _Draft, entry: HistoryEntry) -> None:
    """A recorded error: the attempt failed, and was retried unless a `failed` entry follows."""
    traceback = str(entry.extra.get("traceback", ""))
    path = entry.extra.get("exception_class_path") or path_from_traceback(traceback)
    draft.error = AttemptError(None, str(path or ""), traceback)
    draft.end(Outcome.RETRIED, entry.when)


def _failed(draft: _Draft, entry: HistoryEntry) -> None:
    """The job failed (its error, if recorded, came just before); after a lease notice and
    naming no worker, qless failed it because the lease ran out with no retry left."""
    group = entry.extra.get("group")
    draft.group = None if group is None else str(group)
    if entry.worker is None and draft.lease_ended is not None:
        draft.exhausted = entry.when
        draft.outcome = Outcome.LEASE_EXPIRED
        return
    draft.end(Outcome.FAILED, entry.when)


def _timed_out(draft: _Draft, entry: HistoryEntry) -> None:
    """The lease ended: when the worker ran the job until is not known."""
    draft.lease_ended = entry.when
    draft.outcome = Outcome.TIMED_OUT


ENDINGS: dict[str, Callable[[_Draft, HistoryEntry], None]] = {
    "done": _done,
    ERROR_EVENT: _task_error,
    "failed": _failed,
    "timed-out": _timed_out,
    HANDED_BACK: lambda draft, entry: draft.end(Outcome.HANDED_BACK, entry.when),
}


def build_attempts(
    history: Iterable[HistoryEntry], state: str, failure: Failure | None = None,
    worker: str | None = None,
) -> list[Attempt]:
    """The attempts a history records, oldest first, for a job now in `state` (run by `worker`)."""
    drafts: list[_Draft] = []
    current: _Draft | None = None  # the attempt later entries may still end or refine
    for entry in history:
        if entry.what in ("popped", "put"):
            _close(current, Outcome.REQUEUED if entry.what == "put" else Outcome.UNREPORTED, entry)
            current = None
            if entry.what == "popped":
                current = _Draft(worker=entry.worker, started=entry.when)
                drafts.append(current)
        elif entry.what in ENDINGS:
            if current is None:
                # No `popped` before it: written by a client that does not record pops,
                # or the pop fell off the capped history.
                current = _Draft(worker=entry.worker, started=None)
                drafts.append(current)
            ENDINGS[entry.what](current, entry)
    if current is not None and current.outcome is None and state != "running":
        current.outcome = Outcome.UNREPORTED
    if state == "running" and not drafts:
        # Popped by a client whose pops leave no history entry.
        drafts.append(_Draft(worker=worker or None, started=None))
    if failure is not None:
        _attach(drafts, failure)
    return [_finish(number, draft) for number, draft in enumerate(drafts, start=1)]


def attempts_of(job: Job, redaction: Redaction | None = None) -> list[Attempt]:
    """The attempts of a job, oldest first, tracebacks masked (left out for a user who may
    not see job data: the group, exception class, worker and times stay)."""
    shown = redaction or masking.redaction(shows_data=True)
    attempts = build_attempts(job.history, job.state, job.failure, job.worker)
    return [redacted(attempt, shown) for attempt in attempts]


def redacted(attempt: Attempt, redaction: Redaction) -> Attempt:
    """An attempt with its traceback (and so its summary) masked or left out."""
    if attempt.error is None:
        return attempt
    error = replace(attempt.error, traceback=redaction.text(attempt.error.traceback))
    return replace(attempt, error=error)


def _close(draft: _Draft | None, outcome: Outcome, entry: HistoryEntry) -> None:
    """End an attempt no entry ended when a new `put` or `popped` comes."""
    if draft is not None and draft.outcome is None:
        draft.outcome = outcome
        # A `popped` after an unreported attempt says nothing of when it ended.
        draft.ended = entry.when if outcome is Outcome.REQUEUED else None


def _attach(drafts: list[_Draft], failure: Failure) -> None:
    """Give the job's latest failure to the attempt it belongs to, where history lacks it."""
    draft = _owner(drafts, failure)
    if draft is None:
        return
    draft.group = draft.group or failure.group or None
    if draft.error is None or not draft.error.traceback:
        # Only the message is kept: its class path is shown only when the worker recorded it.
        draft.error = AttemptError(None, "", failure.message)
    if draft.outcome is Outcome.UNREPORTED:
        # A retry writes no history: the failure says this attempt was retried.
        draft.outcome = Outcome.RETRIED


def _owner(drafts: list[_Draft], failure: Failure) -> _Draft | None:
    """The latest failing attempt started by the failure's time (by its worker, if named)."""
    for draft in reversed(drafts):
        if draft.outcome not in FAILING:
            continue
        if draft.started is not None and draft.started > failure.when:
            continue
        if failure.worker and draft.worker and draft.worker != failure.worker:
            continue
        return draft
    return None


def _finish(number: int, draft: _Draft) -> Attempt:
    """The shown attempt of a draft: times as datetimes, the group inside the error."""
    error = draft.error
    if draft.group is not None:
        error = replace(error, group=draft.group) if error else AttemptError(draft.group, "", "")
    return Attempt(
        number=number,
        worker=draft.worker,
        started=None if draft.started is None else when(draft.started),
        ended=None if draft.ended is None else when(draft.ended),
        outcome=draft.outcome or Outcome.RUNNING,
        error=error,
        lease_ended=None if draft.lease_ended is None else when(draft.lease_ended),
        exhausted=None if draft.exhausted is None else when(draft.exhausted),
    )
