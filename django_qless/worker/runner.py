"""Running one popped job: look up its klass, call it, then fail, retry or hand it back.

Everything here happens in the worker's job thread. A job whose function returned ends as
`Outcome.SUCCEEDED`: its completion is the fetcher's to send (with the next pops), with
the return value in the job data when it is kept (`targets`). Every failed attempt is
recorded in the job's history before the `fail` or `retry` (`results.record_error`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from .. import signals
from ..core import Command, Job, LockLostError, RetryJob, UnknownJobError, commands, hooks
from ..registry import registry
from ..results import RESULT_KEY, record_error
from . import current
from .child_failures import ChildFailure
from .databases import ConnectionHygiene
from .failures import group_for, message_for, retried, truncate
from .interrupt import Interrupter, JobInterrupted, LockLost, ShutdownTimeout
from .isolation import Isolation
from .late_slots import LateSlotGate
from .log_fields import job_fields
from .monitor import Monitor
from .options import WorkerOptions
from .report import Outcome, Reporter, hand_back
from .state import RunningJob
from .targets import NOTHING, JobTarget, Target, find_task
from .task_advice import task_advice, task_alias, task_missing

#: When this worker process started (the module is imported as the worker starts): a job
#: enqueued later may come from code the worker has not loaded.
PROCESS_STARTED = time.time()

logger = logging.getLogger("django_qless.worker")


@dataclass
class Ending:
    """How the job function ended: returned (`exc` None), raised, or was interrupted."""

    duration: float
    exc: BaseException | None = None


class JobRunner:
    """Runs jobs for one worker; everything here happens in the worker's job thread."""

    def __init__(self, options: WorkerOptions, monitor: Monitor, interrupter: Interrupter,
                 reporter: Reporter, send: Callable[[Command], Any] | None = None) -> None:
        self.options = options
        self.monitor = monitor
        #: Sends a failure or retry and returns the reply (raising a script error): the
        #: job's own client, or the round trips a worker of many slots shares.
        self.send = send
        self.interrupter = interrupter
        self.reporter = reporter
        self.worker_name = reporter.worker_name
        self.databases = ConnectionHygiene()
        self.isolation = Isolation(options)
        self.late_slots = LateSlotGate(self.worker_name)
        #: How long the last job's function ran (seconds; 0 when it was not called).
        self.last_duration = 0.0

    def run(self, job: Job, lease: float) -> Outcome:
        """Run a popped job to its end; returns what happened to it (SUCCEEDED: not completed
        yet)."""
        self.last_duration = 0.0
        target = self.begin(job)
        if isinstance(target, Outcome):
            return target
        limit = target.time_limit or self.options.time_limit
        interval = target.heartbeat or self.options.heartbeat_interval
        isolated = self.isolation.applies(target)
        # An isolated job's lease is renewed up to its hard limit, when its process is killed.
        watched = self.isolation.hard_limit(limit) if isolated else limit
        running = self.monitor.begin(job, lease, interval, watched)
        current.running(job.jid)
        try:
            ending = (Ending(0.0) if running.lost is not None
                      else self._call(target, job, limit, isolated, running))
        finally:
            self.monitor.end()
            current.running(None)
        self.last_duration = ending.duration
        return self.conclude(target, job, ending, running)

    def begin(self, job: Job) -> Target | Outcome:
        """What runs the job; or its outcome when it does not run (a late cron slot, an
        unknown klass)."""
        skipped = self.late_slots.check(job)
        if skipped is not None:
            return skipped
        target = self._target(job)
        if isinstance(target, UnknownJobError):
            return self._fail_unknown(job, target)
        self.reporter.expect(job.jid, target.finished)
        return target

    def conclude(self, target: Target, job: Job, ending: Ending, running: RunningJob
                 ) -> Outcome:
        """Tell qless and the signals how the job ended, once it is no longer watched."""
        # After the monitor's `end()`, no fence can fire: a fenced job (or one whose lock
        # was lost) is neither completed nor failed here, whatever its function did.
        if running.lost is not None:
            return self.reporter.lost(job, running.lost)
        outcome = self._settle(target, job, ending)
        if outcome is not Outcome.SUCCEEDED:
            self.reporter.settled(job, outcome)
        return outcome

    @staticmethod
    def _target(job: Job) -> Target | UnknownJobError:
        """The registered job first, then (only then) a Tasks task; else the lookup error."""
        try:
            return JobTarget(registry.get(job.klass))
        except UnknownJobError as exc:
            return find_task(job) or exc

    def _call(self, target: Target, job: Job, limit: float | None, isolated: bool,
              running: RunningJob) -> Ending:
        """Call the job function (here or in a child) with DB hygiene around it and
        interruptions armed."""
        self.databases.before_job()
        self.reporter.send(signals.job_started, job)
        started = time.monotonic()
        try:
            # An isolated job's run hooks are entered in its child, around the job itself.
            with hooks.NO_HOOK if isolated else hooks.running(job, self.worker_name):
                try:
                    # An isolated job's child enforces the soft limit; the parent only
                    # waits, and reads its interruptions between two waits
                    # (`Isolation.call`).
                    self.interrupter.arm(None if isolated else limit, polled=isolated)
                    if running.lost is not None:
                        # Lost (or fenced) before the arming: that interruption found
                        # nothing to stop, so the job does not start.
                        raise LockLost()
                    # Isolated: the child already checked the value it kept (`NOTHING`).
                    result = (self.isolation.call(target, job, limit, self.interrupter)
                              if isolated else target.call(job))
                finally:
                    self.interrupter.disarm()
                keep(job, result if isolated else target.stored(result))
        except (Exception, SystemExit, JobInterrupted) as exc:
            # sys.exit() inside a job fails that job; it does not stop the worker.
            return Ending(time.monotonic() - started, exc)
        finally:
            self.databases.after_job()
        return Ending(time.monotonic() - started)

    def _settle(self, target: Target, job: Job, ending: Ending) -> Outcome:
        """Tell qless how the job ended, unless it returned (the fetcher completes it)."""
        exc = ending.exc
        if exc is None:
            return Outcome.SUCCEEDED
        try:
            if isinstance(exc, ShutdownTimeout):
                return self._hand_back(job, ending)
            if isinstance(exc, RetryJob):
                return self._retry_requested(job, ending, exc)
            return self._failed(target, job, ending, exc)
        except LockLostError as lost:
            return self.reporter.lost(job, lost.message)
        except redis.RedisError:
            logger.exception("qless worker %s: could not report job %s (%s) to Redis; its lock "
                             "will expire and qless will hand it out again",
                             self.worker_name, job.jid, type(exc).__name__, extra=job_fields(job))
            return Outcome.UNREPORTED

    def _failed(self, target: Target, job: Job, ending: Ending,
                exc: BaseException) -> Outcome:
        """Fail the job into `<queue>-<Exception>`, or retry it when its policy says so."""
        group = group_for(job.queue_name, exc)
        # A child's failure carries its traceback and retry decision (taken there, with
        # the real exception); the parent only has a stand-in.
        message = exc.message if isinstance(exc, ChildFailure) else message_for(exc)
        record_error(job, exc, message)
        policy = target.retry_policy
        retry = exc.retry if isinstance(exc, ChildFailure) else retried(policy, exc)
        if policy is not None and retry:
            return self._retry(job, ending, policy.delay_for(job.attempt), group, message)
        self._run(job, commands.fail(job.jid, self.worker_name, group, message))
        job.state = "failed"
        self.reporter.send(signals.job_failed, job, duration=ending.duration, exception=exc,
                           group=group)
        return Outcome.FAILED

    def _retry_requested(self, job: Job, ending: Ending, exc: RetryJob) -> Outcome:
        """The job raised `RetryJob`: retry with its delay (and its group, if it gave one)."""
        group = exc.group or group_for(job.queue_name, exc)
        message = truncate(exc.message or str(exc))
        record_error(job, exc, message)
        return self._retry(job, ending, exc.delay, group, message)

    def _retry(self, job: Job, ending: Ending, delay: float, group: str,
               message: str) -> Outcome:
        """qless `retry` with the group and message, so an exhausted job fails into that group."""
        remaining = job.remaining = int(self._run(job, commands.retry(
            job.jid, job.queue_name, self.worker_name, delay, group, message)))
        if remaining < 0:
            self.reporter.send(signals.job_failed, job, duration=ending.duration,
                               exception=ending.exc, group=group)
            return Outcome.FAILED
        self.reporter.send(signals.job_retried, job, duration=ending.duration,
                           exception=ending.exc, delay=delay, remaining=remaining)
        return Outcome.RETRIED

    def _run(self, job: Job, command: Command) -> Any:
        """Send a failure or retry of `job` (shared with other slots' reports, if any)."""
        return job.client.run(command) if self.send is None else self.send(command)

    def _hand_back(self, job: Job, ending: Ending) -> Outcome:
        """Shutdown deadline passed: put the job back in its queue without spending a retry."""
        hand_back(job, self.worker_name, "worker shutdown", after=round(ending.duration, 3))
        logger.warning("qless worker %s: job %s did not finish within the %ss shutdown timeout;"
                       " handed back to queue %s", self.worker_name, job.jid,
                       self.options.shutdown_timeout, job.queue_name, extra=job_fields(job))
        return Outcome.HANDED_BACK

    def _fail_unknown(self, job: Job, exc: UnknownJobError) -> Outcome:
        """A klass missing from the registry is never imported: the job fails at once."""
        group = group_for(job.queue_name, UnknownJobError)
        alias = task_alias(job)
        if alias is not None:
            # A settings problem is the worker's configuration, not its code's age.
            advice = task_advice(alias)
            message = (f"UnknownJobError: Django task {job.klass!r} cannot run in worker "
                       f"{self.worker_name}: "
                       + (advice or task_missing(job.klass) + "." + stale_worker_hint(job)))
        else:
            message = (f"UnknownJobError: {exc}\nklass {job.klass!r} is not a registered job "
                       f"in worker {self.worker_name}; jobs are only run from the registry."
                       + unknown_klass_hint(job))
        try:
            job.fail(group, message)
        except LockLostError as lost:
            logger.info("qless worker %s: unknown job %s lost its lock: %s", self.worker_name,
                        job.jid, lost.message, extra=job_fields(job))
            return Outcome.LOCK_LOST
        self.reporter.send(signals.job_failed, job, duration=0.0, exception=exc, group=group)
        return Outcome.FAILED


def unknown_klass_hint(job: Job) -> str:
    """Why a klass may be unknown: an empty one names nothing, else the code may be stale."""
    if not job.klass:
        # Another qless client may put one (the Ruby gem, for an anonymous class); no
        # restart or deployment of this worker can ever make it runnable.
        return ("\nThe job has an empty klass, which names no job: it was put by another "
                "qless client and no django_qless worker can run it.")
    return stale_worker_hint(job)


def stale_worker_hint(job: Job) -> str:
    """Why a klass may be unknown: the worker's code is older than the job's."""
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(PROCESS_STARTED))
    put = next((entry.when for entry in job.history if entry.what == "put"), None)
    if put is not None and put > PROCESS_STARTED:
        return (f"\nThis worker has run since {started}, before the job was enqueued: its "
                "code may be older than the code that enqueued it. Restart the worker (in "
                "development, qless_worker --reload restarts it on code changes).")
    return f"\nThis worker has run since {started}."


def keep(job: Job, value: Any) -> None:
    """Put a kept return value in the job data its completion sends (`NOTHING`: none)."""
    if value is NOTHING:
        return
    data = {**job.data, RESULT_KEY: value}
    job.raw_data = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    job.__dict__.pop("data", None)  # the cached decoding of the old data
