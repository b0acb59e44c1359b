"""Running one popped job: look up its klass, call it, then complete, fail, retry or hand back."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import redis

from .. import signals
from ..core import Job, LockLostError, RetryJob, UnknownJobError
from ..exceptions import BadPayloadError
from ..registry import registry
from .databases import ConnectionHygiene
from .failures import group_for, message_for, truncate
from .interrupt import Interrupter, JobInterrupted, ShutdownTimeout
from .monitor import Monitor
from .state import RunningJob

if TYPE_CHECKING:
    from ..jobs import JobDefinition
    from .options import WorkerOptions

    Definition = JobDefinition[Any, Any]

logger = logging.getLogger("django_qless.worker")

#: History entry written when a job is handed back at shutdown.
HANDED_BACK = "handed-back"
#: What `run` returns for a job whose completion was sent but is not answered yet.
COMPLETING = "completing"

#: Reports how qless answered a completion (None: it was accepted); returns the outcome.
Reported = Callable[[BaseException | None], str]


@dataclass
class Outcome:
    """How the job function ended: `done`, `raised`, `retry` or `interrupted`."""

    kind: str
    duration: float
    exc: BaseException | None = None


class JobRunner:
    """Runs jobs for one worker; everything here happens in the worker's job thread."""

    def __init__(self, options: WorkerOptions, monitor: Monitor, interrupter: Interrupter,
                 worker_name: str) -> None:
        self.options = options
        self.monitor = monitor
        self.interrupter = interrupter
        self.worker_name = worker_name
        self.databases = ConnectionHygiene()
        #: Completes a job and reports how that went; the worker swaps in one that also pops
        #: ahead, and may report later (it then returns `COMPLETING`).
        self.complete: Callable[[Job, Reported], str] = complete_now
        #: How long the last job's function ran (seconds; 0 when it was not called).
        self.last_duration = 0.0

    def run(self, job: Job, lease: float) -> str:
        """Run a popped job to its end; returns what happened to it (for counters and tests)."""
        self.last_duration = 0.0
        try:
            definition = registry.get(job.klass)
        except UnknownJobError as exc:
            return self._fail_unknown(job, exc)
        limit = definition.time_limit or self.options.time_limit
        interval = definition.heartbeat or self.options.heartbeat_interval
        running = self.monitor.begin(job, lease, interval, limit)
        try:
            if running.lost is not None:
                outcome = Outcome("interrupted", 0.0)
            else:
                outcome = self._call(definition, job, limit)
        finally:
            self.monitor.end()
        self.last_duration = outcome.duration
        return self._settle(definition, job, running, outcome)

    def _call(self, definition: Definition, job: Job, limit: float | None) -> Outcome:
        """Call the job function with DB hygiene around it and interruptions armed."""
        self.databases.before_job()
        self._send(signals.job_started, definition, job)
        started = time.monotonic()
        try:
            try:
                self.interrupter.arm(limit)
                definition.execute(job)
            finally:
                self.interrupter.disarm()
        except JobInterrupted as exc:
            return Outcome("interrupted", time.monotonic() - started, exc)
        except RetryJob as exc:
            return Outcome("retry", time.monotonic() - started, exc)
        except (Exception, SystemExit) as exc:
            # sys.exit() inside a job fails that job; it does not stop the worker.
            return Outcome("raised", time.monotonic() - started, exc)
        finally:
            self.databases.after_job()
        return Outcome("done", time.monotonic() - started)

    def _settle(self, definition: Definition, job: Job, running: RunningJob,
                outcome: Outcome) -> str:
        """Report the outcome to qless; a lost lock means nothing is written."""
        try:
            if running.lost is not None:
                return self._lost(definition, job, running.lost)
            if outcome.kind == "done":
                return self.complete(job, partial(self._reported, definition, job, outcome))
            if isinstance(outcome.exc, ShutdownTimeout):
                return self._hand_back(definition, job, outcome)
            if outcome.kind == "retry" and isinstance(outcome.exc, RetryJob):
                return self._retry_requested(definition, job, outcome, outcome.exc)
            return self._failed(definition, job, outcome)
        except LockLostError as exc:
            return self._lost(definition, job, exc.message)
        except redis.RedisError:
            logger.exception("qless worker %s: could not report job %s (%s) to Redis; its lock "
                             "will expire and qless will hand it out again",
                             self.worker_name, job.jid, outcome.kind)
            return "unreported"

    def _reported(self, definition: Definition, job: Job, outcome: Outcome,
                  error: BaseException | None) -> str:
        """How qless answered the completion of a job that succeeded."""
        if error is None:
            self._send(signals.job_completed, definition, job, duration=outcome.duration)
            return "completed"
        if isinstance(error, LockLostError):
            return self._lost(definition, job, error.message)
        if isinstance(error, redis.RedisError):
            logger.error("qless worker %s: could not report job %s (done) to Redis (%s); its "
                         "lock will expire and qless will hand it out again",
                         self.worker_name, job.jid, error)
            return "unreported"
        raise error

    def _failed(self, definition: Definition, job: Job, outcome: Outcome) -> str:
        """Fail the job into `<queue>-<Exception>`, or retry it when its policy says so."""
        exc = outcome.exc or RuntimeError(f"job {job.jid} ended as {outcome.kind}")
        group, message = group_for(job.queue_name, exc), message_for(exc)
        policy = definition.retry_policy
        # Data that does not fit the function will not fit it on the next try either.
        if policy is not None and policy.should_retry(exc) and not isinstance(
            exc, BadPayloadError
        ):
            attempt = max(job.retries - job.remaining + 1, 1)
            return self._retry(definition, job, outcome, policy.delay_for(attempt), group, message)
        job.fail(group, message)
        self._send(signals.job_failed, definition, job, duration=outcome.duration, exception=exc,
                   group=group)
        return "failed"

    def _retry_requested(self, definition: Definition, job: Job, outcome: Outcome,
                         exc: RetryJob) -> str:
        """The job raised `RetryJob`: retry with its delay (and its group, if it gave one)."""
        group = exc.group or group_for(job.queue_name, exc)
        message = truncate(exc.message or str(exc))
        return self._retry(definition, job, outcome, exc.delay, group, message)

    def _retry(self, definition: Definition, job: Job, outcome: Outcome, delay: float,
               group: str, message: str) -> str:
        """qless `retry` with the group and message, so an exhausted job fails into that group."""
        remaining = job.retry(delay, group, message)
        if remaining < 0:
            self._send(signals.job_failed, definition, job, duration=outcome.duration,
                       exception=outcome.exc, group=group)
            return "failed"
        self._send(signals.job_retried, definition, job, duration=outcome.duration,
                   exception=outcome.exc, delay=delay)
        return "retried"

    def _hand_back(self, definition: Definition, job: Job, outcome: Outcome) -> str:
        """Shutdown deadline passed: put the job back in its queue without spending a retry."""
        hand_back(job, self.worker_name, "worker shutdown", after=round(outcome.duration, 3))
        logger.warning("qless worker %s: job %s did not finish within the %ss shutdown timeout;"
                       " handed back to queue %s", self.worker_name, job.jid,
                       self.options.shutdown_timeout, job.queue_name)
        return "handed back"

    def _lost(self, definition: Definition, job: Job, reason: str) -> str:
        """The lock went elsewhere: write nothing (another worker may be running the job)."""
        logger.info("qless worker %s: job %s stopped, its result discarded: %s",
                    self.worker_name, job.jid, reason)
        self._send(signals.job_lock_lost, definition, job, reason=reason)
        return "lock lost"

    def _fail_unknown(self, job: Job, exc: UnknownJobError) -> str:
        """A klass missing from the registry is never imported: the job fails at once."""
        group = group_for(job.queue_name, UnknownJobError)
        message = (f"UnknownJobError: {exc}\nklass {job.klass!r} is not a registered job in "
                   f"worker {self.worker_name}; jobs are only run from the registry.")
        try:
            job.fail(group, message)
        except LockLostError as lost:
            logger.info("qless worker %s: unknown job %s lost its lock: %s", self.worker_name,
                        job.jid, lost.message)
            return "lock lost"
        signals.job_failed.send(sender=None, jid=job.jid, queue=job.queue_name, klass=job.klass,
                                worker=self.worker_name, duration=0.0, exception=exc,
                                group=group)
        return "failed"

    def _send(self, signal: Any, definition: Definition, job: Job, **extra: Any) -> None:
        """Send a job signal; a failing receiver is logged, never allowed to stop the worker."""
        try:
            signal.send(sender=definition, jid=job.jid, queue=job.queue_name, klass=job.klass,
                        worker=self.worker_name, **extra)
        except Exception:
            logger.exception("qless worker %s: a signal receiver failed", self.worker_name)


def complete_now(job: Job, reported: Reported) -> str:
    """qless `complete` in one round trip of its own; returns what `reported` makes of it."""
    try:
        job.complete()
    except (LockLostError, redis.RedisError) as exc:
        return reported(exc)
    return reported(None)


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
