"""Outbox rows and the puts they hold: a row from a `Submission`, and a `Submission` back."""

from __future__ import annotations

from ..core.submission import PutOptions, Submission
from .models import OutboxEntry


def row_of(submission: Submission, connection: str, now: float | None,
           task_backend: str = "") -> OutboxEntry:
    """The row of a put (not saved); a delay is counted from `now`, the enqueue."""
    options = submission.options
    if options.not_before is not None:
        not_before = options.not_before
    elif now is None:
        raise ValueError("a delayed put needs the clock of its enqueue")
    else:
        not_before = now + options.delay
    return OutboxEntry(
        connection=connection, queue=submission.queue, jid=submission.jid,
        klass=submission.klass, data=submission.data, not_before=not_before,
        priority=options.priority, tags=list(options.tags or ()), retries=options.retries,
        depends=list(options.depends or ()), tracked=options.tracked,
        unique=options.unique or "", task_backend=task_backend,
    )


def submission_of(entry: OutboxEntry, policy: str | None) -> Submission:
    """The put of a row (`policy`: None for a plain put, else `put.ifabsent`'s); its delay
    is counted from the put's clock to the row's `not_before`."""
    return Submission(entry.jid, entry.klass, entry.queue, entry.data, PutOptions(
        not_before=entry.not_before, priority=entry.priority, tags=tuple(entry.tags),
        retries=entry.retries, depends=tuple(entry.depends), tracked=entry.tracked,
        unique=policy,
    ))
