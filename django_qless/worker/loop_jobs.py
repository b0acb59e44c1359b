"""`async def` jobs run by the event loop itself, with no thread of their own.

With `--concurrency N` a plain function needs a slot thread for as long as it runs; a
coroutine does not. An `async def` `@qless_job` is therefore started, awaited and stopped
on the process's loop (`loop_thread`): its lease is watched by `Renewals` with an
interrupter of its own, whose interruption (time limit, lost lock, fence, shutdown
timeout) cancels its task alone, the one task that runs the job from its check to its
end (`Stop`: no cancellation reaches the task once the job's coroutine has returned).
Its thread-sensitive sync calls (the async ORM, `sync_to_async`) borrow an idle slot
thread at the first one (`lent_thread`). The jobs of one pop reach the loop with one
wake-up; the jobs that end in one pass of the loop go to one finisher thread together,
which sends the completions of every loop job that ended meanwhile in one round trip and
frees their slots.

Such a job still holds one of the N slots, so plain functions and coroutines together
never exceed N. A job whose start or end must run in a thread stays on the slot threads
(`Slots`): a Django Tasks task, a cron slot job (its lateness is read from Redis before
it starts), a jid whose earlier run here is still stopping, and every job while receivers
other than the library's log receivers listen to the job signals (they may use the ORM,
which Django refuses on the loop's thread).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import redis

from .. import coroutines, signals
from ..core import Job, hooks
from ..core.late_slots import slot_ref
from ..registry import registry
from . import current
from .completions import Completions
from .held import Held, still_ours
from .interrupt import Interrupter, JobInterrupted, LockLost
from .lent_thread import LentThread
from .log_fields import job_fields
from .loop_thread import served_by
from .options import WorkerOptions
from .renewals import Renewals
from .report import Outcome, Reporter
from .runner import Ending, JobRunner, keep
from .slots import Slots
from .state import RunningJob
from .targets import Target

logger = logging.getLogger("django_qless.worker")

#: Every signal sent between a job's pop and its report.
JOB_SIGNALS = (signals.job_started, signals.job_completed, signals.job_failed,
               signals.job_retried, signals.job_lock_lost)

#: What qless said of a completion (its new state or the error) -> the job's outcome.
Completed = Callable[[Job, float, Any], Outcome]
#: Counts a job that ended (outcome, seconds it ran) and checks the worker's limits.
Counted = Callable[[Job, Outcome, float], None]


@dataclass
class Ended:
    """A loop job that ended, for the finisher: its outcome, or what it needs to settle it."""

    job: Job
    outcome: Outcome | None = None
    target: Target | None = None
    ending: Ending | None = None
    running: RunningJob | None = None

    @property
    def duration(self) -> float:
        """How long its function ran (0 when it was not called)."""
        return self.ending.duration if self.ending is not None else 0.0

    @property
    def succeeded(self) -> bool:
        """True when its function returned and it is still ours: it is to be completed."""
        return (self.outcome is None and self.ending is not None and self.ending.exc is None
                and self.running is not None and self.running.lost is None)


class LoopJobs:
    """Starts `async def` jobs as tasks on the loop; reports them from one finisher thread."""

    def __init__(self, options: WorkerOptions, slots: Slots, renewals: Renewals,
                 runner: JobRunner, completions: Completions, completed: Completed,
                 counted: Counted) -> None:
        self.options = options
        self.slots = slots
        self.renewals = renewals
        self.completions = completions
        #: Looks up, settles and signals the jobs (its own interrupter is never armed).
        self.runner = runner
        self.reporter: Reporter = runner.reporter
        self.name = runner.worker_name
        self.completed = completed
        self.counted = counted
        self._ended: queue.SimpleQueue[list[Ended] | None] = queue.SimpleQueue()
        #: Loop jobs that ended in the loop's current pass, handed over together after it.
        self._ending: list[Ended] = []
        self._finisher = threading.Thread(target=self._finish_all, daemon=True,
                                          name=f"qless-finisher-{self.name}")
        #: Jobs handed over and not yet started; `_woken` once the loop was asked to.
        self._starting: list[Held] = []
        self._woken = False
        self._starting_lock = threading.Lock()
        #: The running tasks (the loop keeps only weak references to them).
        self._tasks: set[asyncio.Task[None]] = set()

    def takes(self, job: Job) -> bool:
        """True when the loop can run this job from its start to its report."""
        if slot_ref(job.jid) is not None or job.jid in self.renewals.jobs:
            return False
        definition = registry.lookup(job.klass)
        return (definition is not None and inspect.iscoroutinefunction(definition.func)
                and signals.logged_only(*JOB_SIGNALS))

    def start(self, held: Held) -> None:
        """Run a popped job as a task on the loop (its slot counted busy from now)."""
        self.slots.reserve()
        with self._starting_lock:
            # Under the lock: a slot thread starts loop jobs too (`PoolWorker._next_for_slot`).
            if not self._finisher.is_alive():
                self._finisher.start()
            self._starting.append(held)
            if self._woken:
                return
            self._woken = True
        # One wake-up of the loop for the jobs of a whole pop, not one per job.
        self.slots.loops.loop.call_soon_threadsafe(self._create_all)

    def close(self) -> None:
        """End the finisher thread once every loop job is reported (after the drain)."""
        if self._finisher.is_alive():
            self._ended.put(None)
            self._finisher.join(5)

    # The loop's thread.

    def _create_all(self) -> None:
        """Start a task for each job handed over since the last wake-up."""
        with self._starting_lock:
            helds, self._starting, self._woken = self._starting, [], False
        loop = asyncio.get_running_loop()
        for held in helds:
            task = loop.create_task(self._run(held))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, held: Held) -> None:
        """Run one job; hand its end to the finisher, whatever happened."""
        started = time.monotonic()
        try:
            ended = await self._job(held)
        except Exception:
            # A bug must not lose the slot: the job's lock expires and qless hands it out.
            logger.exception("qless worker %s: unexpected error running job %s (%.1f s)",
                             self.name, held.job.jid, time.monotonic() - started,
                             extra=job_fields(held.job))
            ended = Ended(held.job, Outcome.UNREPORTED)
        if not self._ending:
            asyncio.get_running_loop().call_soon(self._hand_over)
        self._ending.append(ended)

    def _hand_over(self) -> None:
        """Give the finisher every job that ended in the loop's last pass, as one batch:
        jobs that end at the same moment share one round trip."""
        ending, self._ending = self._ending, []
        self._ended.put(ending)

    async def _job(self, held: Held) -> Ended:
        """Check, watch and run the job; what the finisher needs to report it."""
        job = held.job
        try:
            if not still_ours(held, self.name):
                return Ended(job, Outcome.LOCK_LOST)
        except redis.RedisError as exc:
            logger.warning("qless worker %s: could not renew job %s before its start (%s); "
                           "not started: its lock expires and qless hands it out again",
                           self.name, job.jid, exc, extra=job_fields(job))
            return Ended(job, Outcome.UNREPORTED)
        target = self.runner.begin(job)
        if isinstance(target, Outcome):
            return Ended(job, target)
        lease = max(float(job.expires) - job.client.now(), 1.0)
        limit = target.time_limit or self.options.time_limit
        interval = target.heartbeat or self.options.heartbeat_interval
        interrupter = Interrupter(use_signals=False)
        running = self.renewals.begin(job, lease, interval, limit, runner=interrupter)
        current.running(job.jid, key=interrupter)
        try:
            ending = (Ending(0.0) if running.lost is not None
                      else await self._call(target, job, limit, interrupter, running))
        finally:
            self.renewals.end(interrupter)
            current.running(None, key=interrupter)
        return Ended(job, None, target, ending, running)

    async def _call(self, target: Target, job: Job, limit: float | None,
                    interrupter: Interrupter, running: RunningJob) -> Ending:
        """Await the job's coroutine in this task, which its interrupter cancels; how it
        ended."""
        loop = asyncio.get_running_loop()
        self.reporter.send(signals.job_started, job)
        started = time.monotonic()
        thread = LentThread(self.slots.lend)
        stop = Stop(asyncio.current_task())
        # Set before arming: an interruption never finds an armed interrupter without it
        # (it would raise into the loop's thread). It runs in the interrupting thread.
        interrupter.cancel_with(lambda: loop.call_soon_threadsafe(stop.cancel))
        try:
            # Entered in this task, the job's own: what a hook sets in its context
            # (contextvars) is this job's alone, whatever else runs on the loop.
            with hooks.running(job, self.name):
                try:
                    interrupter.arm(limit)
                    if running.lost is not None:
                        raise LockLost()  # lost before the arming: the job does not start
                    with coroutines.deferring():  # checks and decodes its arguments here
                        called = target.call(job)
                    if isinstance(called, coroutines.Deferred):
                        called = await self._awaited(called.coroutine, thread, stop,
                                                     interrupter, job)
                finally:
                    interrupter.disarm()
                    interrupter.cancel_with(None)
                    returned = thread.close()
                    if returned is not None:
                        # Its last sync call may outlive a cancellation: the job is over
                        # when that call is, as in a slot thread.
                        await asyncio.wrap_future(returned)
                keep(job, target.stored(called))
        except (Exception, SystemExit, JobInterrupted) as exc:
            return Ending(time.monotonic() - started, exc)
        return Ending(time.monotonic() - started)

    async def _awaited(self, coroutine: Coroutine[Any, Any, Any], thread: LentThread,
                       stop: Stop, interrupter: Interrupter, job: Job) -> Any:
        """What the job's coroutine returned; raises what it raised, or its interruption."""
        stop.armed = True
        try:
            value = await served_by(thread, coroutine)  # its sync calls: the lent thread
        except asyncio.CancelledError:
            stop.settle()
            pending = interrupter.pending
            if pending is None or not stop.cancelled:
                # Cancelled by itself or by code it called: a failure of the job, as
                # raising anything else would be (the slot must be reported and freed).
                raise RuntimeError("the job's coroutine was cancelled") from None
            raise pending() from None
        finally:
            stop.armed = False
        pending = interrupter.pending
        if pending is None:
            return value
        if stop.cancelled:
            # It caught its cancellation and went on: stopped all the same.
            stop.settle()
            self.slots.swallowed_one()
            logger.warning("qless worker %s: job %s swallowed its interruption (%s) and "
                           "returned", self.name, job.jid, pending.reason, extra=job_fields(job))
        # Else interrupted as it returned: its result is discarded all the same.
        raise pending()

    # The finisher thread.

    def _finish_all(self) -> None:
        """Report ended loop jobs, all those that ended meanwhile together, until closed."""
        while (first := self._ended.get()) is not None:
            batch = list(first)
            closing = False
            while not self._ended.empty():
                item = self._ended.get()
                if item is None:
                    closing = True
                    break
                batch.extend(item)
            self._finish(batch)
            if closing:
                return

    def _finish(self, batch: list[Ended]) -> None:
        """Complete the jobs that returned in one round trip, settle the others, free
        their slots."""
        succeeded = [ended for ended in batch if ended.succeeded]
        try:
            answers = self.completed_all(succeeded)
        except Exception:
            logger.exception("qless worker %s: could not complete %s job(s)", self.name,
                             len(succeeded))
            answers = [Outcome.UNREPORTED] * len(succeeded)
        for ended, outcome in zip(succeeded, answers, strict=True):
            ended.outcome = outcome
        try:
            for ended in batch:
                try:
                    if ended.outcome is None:
                        assert ended.target and ended.ending and ended.running  # noqa: S101 - set together
                        ended.outcome = self.runner.conclude(ended.target, ended.job,
                                                             ended.ending, ended.running)
                    self.counted(ended.job, ended.outcome, ended.duration)
                except Exception:
                    logger.exception("qless worker %s: could not report job %s", self.name,
                                     ended.job.jid, extra=job_fields(ended.job))
        finally:
            # Freed together, refilled together: freed one by one, the worker would pop
            # for each, and the jobs would start and end apart, a round trip each, from
            # then on.
            self.slots.release(len(batch))

    def completed_all(self, succeeded: list[Ended]) -> list[Outcome]:
        """Send the completions of `succeeded` together; each one's outcome."""
        if not succeeded:
            return []
        answers = self.completions.complete_all([ended.job for ended in succeeded])
        return [self.completed(ended.job, ended.duration, answer)
                for ended, answer in zip(succeeded, answers, strict=True)]


class Stop:
    """Cancels one loop job's task on its interruption, only while its coroutine runs."""

    def __init__(self, task: asyncio.Task[Any] | None) -> None:
        self.task = task
        #: True while the task awaits the job's coroutine (set and read on the loop).
        self.armed = False
        self.cancelled = False

    def cancel(self) -> None:
        """Cancel the task if the job's coroutine still runs (on the loop's thread): once
        it returned, a late interruption has nothing to stop."""
        if self.armed and self.task is not None and not self.cancelled:
            self.cancelled = True
            self.task.cancel()

    def settle(self) -> None:
        """Withdraw the cancellations the task received: what follows the job's coroutine
        in this task (its report) runs as if none came."""
        task = self.task
        if task is not None and hasattr(task, "uncancel"):  # Python 3.11+
            while task.cancelling():
                task.uncancel()
