"""Django signals sent around jobs and workers.

Job signals are sent with the `JobDefinition` as sender (None when the klass is not
registered) and these keyword arguments:

- `job_enqueued`: jid, queue, klass, connection (alias), priority, tags, delay, immediate.
  Sent once the job is in Redis (after the commit when the put was deferred), or just
  before it runs inline in immediate mode.
- `job_started`: jid, queue, klass, worker (name).
- `job_completed`: jid, queue, klass, worker, duration (seconds).
- `job_failed`: jid, queue, klass, worker, duration, exception, group.
- `job_retried`: jid, queue, klass, worker, duration, exception, delay (seconds).
- `job_lock_lost`: jid, queue, klass, worker.

Worker signals are sent with the `Worker` as sender and: worker (name), queues.

- `worker_started`, `worker_stopped`.

The library connects logging receivers only (see `signal_handlers`), never log handlers.

Every one of these signals is sent through `send`: a receiver that raises is logged (by
Django, on the `django.dispatch` logger, with its traceback) and the other receivers still
run; the error never reaches the code that sent the signal (an enqueue, the worker).
"""

from __future__ import annotations

from typing import Any

from django.dispatch import Signal

job_enqueued = Signal()
job_started = Signal()
job_completed = Signal()
job_failed = Signal()
job_retried = Signal()
job_lock_lost = Signal()
worker_started = Signal()
worker_stopped = Signal()


def send(signal: Signal, sender: object, **kwargs: Any) -> None:
    """Send `signal` to every receiver; one that raises is logged and never stops the sender."""
    signal.send_robust(sender, **kwargs)


__all__ = [
    "job_completed",
    "job_enqueued",
    "job_failed",
    "job_lock_lost",
    "job_retried",
    "job_started",
    "send",
    "worker_started",
    "worker_stopped",
]
