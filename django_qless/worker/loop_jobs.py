"""`async def` jobs run by the event loop itself, with no thread of their own.

With `--concurrency N` a plain function needs a slot thread for as long as it runs; a
coroutine does not. An `async def` `@qless_job` is therefore started, awaited and stopped
on the process's loop (`loop_thread`): its lease is watched by `Renewals` with an
interrupter of its own, whose interruption (time limit, lost lock, fence, shutdown
timeout) cancels its task alone. Its thread-sensitive sync calls (the async ORM,
`sync_to_async`) borrow an idle slot thread at the first one (`lent_thread`). When it
ends, its report goes to one finisher thread, which sends the completions of every loop
job that ended meanwhile in one round trip and frees their slots.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from .. import coroutines, signals
from ..core import Job
from ..core.late_slots import slot_ref
from ..registry import registry
from . import current
from .completions import Completions
from .held import Held, still_ours
from .interrupt import Interrupter, JobInterrupted, LockLost
from .lent_thread import LentThread
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
        self._ended: queue.SimpleQueue[Ended | None] = queue.SimpleQueue()
        self._finisher = threading.Thread(target=self._finish_all, daemon=True,
                                          name=f"qless-finisher-{self.name}")
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
        if not self._finisher.is_alive():
            self._finisher.start()
        self.slots.reserve()
        self.slots.loops.loop.call_soon_threadsafe(self._create, held)

    def close(self) -> None:
        """End the finisher thread once every loop job is reported (after the drain)."""
        if self._finisher.is_alive():
            self._ended.put(None)
            self._finisher.join(5)

    # The loop's thread.

    def _create(self, held: Held) -> None:
        """Start the job's task."""
        task = asyncio.get_running_loop().create_task(self._run(held))
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
                             self.name, held.job.jid, time.monotonic() - started)
            ended = Ended(held.job, Outcome.UNREPORTED)
        self._ended.put(ended)

    async def _job(self, held: Held) -> Ended:
        """Check, watch and run the job; what the finisher needs to report it."""
        job = held.job
        try:
            if not still_ours(held, self.name):
                return Ended(job, Outcome.LOCK_LOST)
        except redis.RedisError as exc:
            logger.warning("qless worker %s: could not renew job %s before its start (%s); "
                           "not started: its lock expires and qless hands it out again",
                           self.name, job.jid, exc)
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
        """Await the job's coroutine as a task its interrupter cancels; how it ended."""
        loop = asyncio.get_running_loop()
        self.reporter.send(signals.job_started, job)
        started = time.monotonic()
        thread = LentThread(self.slots.lend)
        tasks: list[asyncio.Task[Any]] = []
        # Set before arming: an interruption never finds an armed interrupter without it
        # (it would raise into the loop's thread). It runs in the interrupting thread.
        interrupter.cancel_with(lambda: loop.call_soon_threadsafe(cancel_first, tasks))
        try:
            try:
                interrupter.arm(limit)
                if running.lost is not None:
                    raise LockLost()  # lost before the arming: the job does not start
                with coroutines.deferring():  # checks and decodes its arguments here
                    called = target.call(job)
                if isinstance(called, coroutines.Deferred):
                    tasks.append(loop.create_task(served_by(thread, called.coroutine)))
                    await asyncio.wait(tasks)
                    called = self._value(tasks[0], interrupter, job)
            finally:
                interrupter.disarm()
                interrupter.cancel_with(None)
                returned = thread.close()
                if returned is not None:
                    # Its last sync call may outlive a cancellation: the job is over when
                    # that call is, as in a slot thread.
                    await asyncio.wrap_future(returned)
            keep(job, target.stored(called))
        except (Exception, SystemExit, JobInterrupted) as exc:
            return Ending(time.monotonic() - started, exc)
        return Ending(time.monotonic() - started)

    def _value(self, task: asyncio.Task[Any], interrupter: Interrupter, job: Job) -> Any:
        """What the job's task returned; raises what it raised, or its interruption."""
        pending = interrupter.pending
        if task.cancelled():
            if pending is None:
                raise RuntimeError("the job's coroutine was cancelled")
            raise pending()
        if pending is not None:
            # It caught its cancellation and went on: stopped all the same.
            self.slots.swallowed_one()
            logger.warning("qless worker %s: job %s swallowed its interruption (%s) and "
                           "returned", self.name, job.jid, pending.reason)
            raise pending()
        error = task.exception()
        if error is not None:
            raise error
        return task.result()

    # The finisher thread.

    def _finish_all(self) -> None:
        """Report ended loop jobs, all those that ended meanwhile together, until closed."""
        while (first := self._ended.get()) is not None:
            batch = [first]
            closing = False
            while not self._ended.empty():
                item = self._ended.get()
                if item is None:
                    closing = True
                    break
                batch.append(item)
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
        for ended in batch:
            try:
                if ended.outcome is None:
                    assert ended.target and ended.ending and ended.running  # noqa: S101 - set together
                    ended.outcome = self.runner.conclude(ended.target, ended.job, ended.ending,
                                                         ended.running)
                self.counted(ended.job, ended.outcome, ended.duration)
            except Exception:
                logger.exception("qless worker %s: could not report job %s", self.name,
                                 ended.job.jid)
            finally:
                self.slots.release()

    def completed_all(self, succeeded: list[Ended]) -> list[Outcome]:
        """Send the completions of `succeeded` together; each one's outcome."""
        if not succeeded:
            return []
        answers = self.completions.complete_all([ended.job for ended in succeeded])
        return [self.completed(ended.job, ended.duration, answer)
                for ended, answer in zip(succeeded, answers, strict=True)]


def cancel_first(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel the job's task, once it exists (an interruption may come just before)."""
    if tasks:
        tasks[0].cancel()
