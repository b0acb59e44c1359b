"""The signal of a swept job, sent once it is in Redis (the commit's put sends its own)."""

from __future__ import annotations

import logging

from .. import signals
from .delivery import Delivery
from .models import OutboxEntry

logger = logging.getLogger("django_qless.outbox")


def announce_swept(entry: OutboxEntry, delivery: Delivery) -> None:
    """`task_enqueued` for a Django task's row, `job_enqueued` for a `@qless_job`'s."""
    if entry.task_backend:
        announce_task(entry)
        return
    from ..registry import registry  # noqa: PLC0415 - the registry imports the Django layer

    signals.send(
        signals.job_enqueued, registry.lookup(entry.klass), jid=entry.jid, queue=entry.queue,
        klass=entry.klass, priority=entry.priority, tags=tuple(entry.tags),
        delay=delivery.delay, connection=entry.connection, immediate=False,
    )


def announce_task(entry: OutboxEntry) -> None:
    """`task_enqueued` with the task's result, read back from the job just put."""
    # Imported here: the Tasks framework is optional (Django 6, or the backport).
    from ..tasks.compat import task_backends, task_enqueued  # noqa: PLC0415

    try:
        backend = task_backends[entry.task_backend]
        result = backend.get_result(entry.jid)
    except Exception as exc:  # the backend was renamed or removed since the enqueue
        logger.warning("qless outbox: task %s is in Redis, but its result could not be read "
                       "for task_enqueued (%s)", entry.jid, exc)
        return
    signals.send(task_enqueued, type(backend), task_result=result)
