"""How a job ended: the outcome, the job signals, and the answers qless gives to a completion.

Everything here runs in the worker's job thread, except `hand_back`, which the monitor
thread also calls for jobs held behind a long one.
"""

from __future__ import annotations

import enum
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import redis
from django.dispatch import Signal

from .. import signals
from ..core import Job, LockLostError
from ..registry import registry
from .log_fields import job_fields

logger = logging.getLogger("django_qless.worker")

#: History entry written when a job is handed back (at shutdown, or held too long).
HANDED_BACK = "handed-back"
#: Jobs whose end is awaited at most (a completion is in flight for one or two at a time).
EXPECTED = 16


class Outcome(str, enum.Enum):
    """What became of one job (`Worker.outcomes` counts them by value)."""

    #: The job function returned; its completion is not sent yet (the fetcher sends it).
    SUCCEEDED = "succeeded"
    COMPLETED = "completed"
    FAILED = "failed"
    RETRIED = "retried"
    LOCK_LOST = "lock lost"
    HANDED_BACK = "handed back"
    #: A cron slot job popped later than its schedule's catch-up policy allows: completed
    #: without running (`late_slots`).
    SKIPPED = "skipped"
    #: qless could not be told (Redis unreachable): the lock expires, the job runs again.
    UNREPORTED = "unreported"


class Reporter:
    """Sends one worker's job signals and turns qless's answer to a completion into an outcome."""

    def __init__(self, worker_name: str, running: int = 1) -> None:
        self.worker_name = worker_name
        #: Ends awaited at most: those of the jobs running at once, and a completion or
        #: two in flight each.
        self.capacity = EXPECTED * running
        self._expected: OrderedDict[str, Callable[[Outcome], None]] = OrderedDict()

    def expect(self, jid: str, on_end: Callable[[Outcome], None]) -> None:
        """Call `on_end` with the job's outcome once qless has the final word on it."""
        self._expected[jid] = on_end
        while len(self._expected) > self.capacity:  # a job lost to a bug in the worker's code
            self._expected.popitem(last=False)

    def settled(self, job: Job, outcome: Outcome) -> Outcome:
        """The job ended as `outcome`: tell whoever expected it; returns the outcome."""
        on_end = self._expected.pop(job.jid, None)
        if on_end is not None:
            try:
                on_end(outcome)
            except Exception:
                logger.exception("qless worker %s: could not report the end of job %s",
                                 self.worker_name, job.jid, extra=job_fields(job))
        return outcome

    def send(self, signal: Signal, job: Job, **extra: Any) -> None:
        """Send a job signal, with the job's definition as sender (None when not registered)."""
        signals.send(signal, registry.lookup(job.klass), jid=job.jid, queue=job.queue_name,
                     klass=job.klass, attempt=job.attempt, worker=self.worker_name, **extra)

    def completed(self, job: Job, duration: float, error: BaseException | None) -> Outcome:
        """How qless answered the completion of a job that succeeded (None: accepted)."""
        if error is None:
            self.send(signals.job_completed, job, duration=duration)
            return self.settled(job, Outcome.COMPLETED)
        if isinstance(error, LockLostError):
            return self.lost(job, error.message)
        if isinstance(error, redis.RedisError):
            logger.error("qless worker %s: could not report job %s (done) to Redis (%s); its "
                         "lock will expire and qless will hand it out again",
                         self.worker_name, job.jid, error, extra=job_fields(job))
            return self.settled(job, Outcome.UNREPORTED)
        raise error

    def lost(self, job: Job, reason: str) -> Outcome:
        """The lock went elsewhere: write nothing (another worker may be running the job)."""
        logger.info("qless worker %s: job %s stopped, its result discarded: %s",
                    self.worker_name, job.jid, reason, extra=job_fields(job))
        self.send(signals.job_lock_lost, job, reason=reason)
        return self.settled(job, Outcome.LOCK_LOST)


def hand_back(job: Job, worker_name: str, reason: str, **details: Any) -> None:
    """Put a job this worker holds back in its queue, without spending a retry.

    A heartbeat first proves the job is still ours (otherwise the re-put would take it
    from its new owner). `requeue` by this worker keeps priority, tags, retries and data;
    qless's put sets `remaining` back to `retries`, so nothing is spent (a job that had
    already used retries gets them back). The history shows a `handed-back` entry, then
    the `put`.
    """
    job.heartbeat()
    job.log(HANDED_BACK, {"worker": worker_name, "reason": reason, **details})
    job.requeue()
