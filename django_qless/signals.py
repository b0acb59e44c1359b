"""Django signals sent around jobs and workers.

Job signals are sent with the `JobDefinition` as sender (None when the klass is not
registered) and these keyword arguments:

- `job_enqueued`: jid, queue, klass, connection (alias), priority, tags, delay, immediate.
  Sent once the job is in Redis (after the commit when the put was deferred), or just
  before it runs inline in immediate mode.
- `job_started`: jid, queue, klass, worker (name).
- `job_completed`: jid, queue, klass, worker, duration (seconds).
- `job_failed`: jid, queue, klass, worker, duration, exception, group.
- `job_retried`: jid, queue, klass, worker, duration, exception, delay (seconds),
  remaining (retries left after this one).
- `job_lock_lost`: jid, queue, klass, worker.

Worker signals are sent with the `Worker` as sender and: worker (name), queues.

- `worker_started`, `worker_stopped`.

The library connects logging receivers only (see `signal_handlers`), never log handlers.

Every one of these signals is sent through `send`: a receiver that raises is logged (by
Django, on the `django.dispatch` logger, with its traceback) and the other receivers still
run; the error never reaches the code that sent the signal (an enqueue, the worker). A
signal whose only receiver is the library's log receiver is not dispatched at all while
that receiver's level is off on the `django_qless` logger.
"""

from __future__ import annotations

import logging
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


#: The log receivers of `signal_handlers`: signal -> (their dispatch_uid, the level they log
#: at on the `django_qless` logger).
LOG_RECEIVERS: dict[Signal, tuple[str, int]] = {}
_logger = logging.getLogger("django_qless")


def send(signal: Signal, sender: object, **kwargs: Any) -> None:
    """Send `signal` to every receiver; one that raises is logged and never stops the sender."""
    if not _silent(signal):
        signal.send_robust(sender, **kwargs)


def logged_only(*sent: Signal) -> bool:
    """True when no receiver but the library's own log receivers listens to any of `sent`
    (then they may be sent from any thread, the event loop's among them)."""
    for signal in sent:
        known = LOG_RECEIVERS.get(signal)
        for receiver in signal.receivers:
            key = receiver[0]
            if known is None or not (isinstance(key, tuple) and key[:1] == (known[0],)):
                return False
    return True


def _silent(signal: Signal) -> bool:
    """True when sending would do nothing: no receiver, or only the log receiver of
    `signal_handlers` while its level is off (Django's dispatch alone costs ~5 us a send,
    one or two per job)."""
    receivers = signal.receivers
    if not receivers:
        return True
    known = LOG_RECEIVERS.get(signal)
    if known is None or len(receivers) != 1:
        return False
    uid, level = known
    # Django keeps each receiver as ((dispatch_uid, sender id), reference, ...); any other
    # shape is sent as usual.
    key = receivers[0][0]
    return isinstance(key, tuple) and key[:1] == (uid,) and not _logger.isEnabledFor(level)


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
