"""The announcement after the put: `job_enqueued` once a job is in Redis, and the signal of
a job the outbox's sweep put (the enqueuer that wrote its row is gone by then)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .. import signals
from ..core.submission import Submission
from ..registry import registry

logger = logging.getLogger("django_qless.outbox")


def jobs(
    submissions: Sequence[Submission], connection: str, fallback: object, *,
    delay: float | None = None, immediate: bool = False,
) -> None:
    """`job_enqueued` for each job of one klass, sent by its registered definition (else
    `fallback`); `delay` overrides the submissions' own (a swept row's is counted anew)."""
    signal = signals.job_enqueued
    if not signal.receivers or not submissions:
        return  # nobody listens (the logging receivers were disconnected): build nothing
    sender = registry.lookup(submissions[0].klass) or fallback
    for submission in submissions:
        options = submission.options
        signals.send(signal, sender, jid=submission.jid, queue=submission.queue,
                     klass=submission.klass, priority=options.priority, tags=options.tags,
                     delay=options.delay if delay is None else delay,
                     connection=connection, immediate=immediate)


def swept(submission: Submission, connection: str, task_backend: str, delay: float) -> None:
    """The signal of a job the sweep put: `task_enqueued` for a Django task's,
    `job_enqueued` for a `@qless_job`'s (sent by None when its klass is not registered)."""
    if task_backend:
        task(submission.jid, task_backend)
    else:
        jobs([submission], connection, None, delay=delay)


def task(jid: str, task_backend: str) -> None:
    """`task_enqueued` with the task's result, read back from the job just put."""
    # Imported here: the Tasks framework is optional (Django 6, or the backport).
    from ..tasks.compat import task_backends, task_enqueued  # noqa: PLC0415

    try:
        backend = task_backends[task_backend]
        result = backend.get_result(jid)
    except Exception as exc:  # the backend was renamed or removed since the enqueue
        logger.warning("qless outbox: task %s is in Redis, but its result could not be read "
                       "for task_enqueued (%s)", jid, exc)
        return
    signals.send(task_enqueued, type(backend), task_result=result)
