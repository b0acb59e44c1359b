"""Building outbox rows from validated puts, in the enqueuing transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .models import OutboxEntry

if TYPE_CHECKING:
    from ..definitions import Submission


def for_submission(submission: Submission, now: float) -> OutboxEntry:
    """The row of a `@qless_job` put (its delay counted from `now`, the enqueue)."""
    return OutboxEntry(
        connection=submission.connection, queue=submission.queue, jid=submission.jid,
        klass=submission.klass, data=submission.encoded, not_before=now + submission.delay,
        priority=submission.priority, tags=list(submission.tags), retries=submission.retries,
        depends=list(submission.depends), tracked=submission.tracked,
        unique=submission.unique or "",
    )


def for_task(
    *, backend: str, connection: str, queue: str, jid: str, klass: str, data: str,
    not_before: float, priority: float, tags: Sequence[str], retries: int | None,
) -> OutboxEntry:
    """The row of a Django task put by `QlessBackend` (`not_before`: its `run_after`)."""
    return OutboxEntry(
        connection=connection, queue=queue, jid=jid, klass=klass, data=data,
        not_before=not_before, priority=priority, tags=list(tags), retries=retries,
        task_backend=backend,
    )
