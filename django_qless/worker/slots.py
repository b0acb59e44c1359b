"""The slots of a worker that runs several jobs at once: N threads, one job each at a time.

Each slot thread runs its jobs with its own `JobRunner` (its database connections,
signals, fail/retry/hand-back) and its own `Interrupter`, without signals: a time limit,
lost lock or fence reaches a plain function as an asynchronous exception
(`PyThreadState_SetAsyncExc`, at its next bytecode) and an `async def` job as the
cancellation of its task on the shared loop (`loop_thread`). The worker loop hands a
slot a job only when one is free (`free`), so never more than N run at once, and is
woken as soon as one ends (`wait_freed`) to pop again at once; a slot given its next job
when its job ends (`Finished`) runs it without freeing itself. A job that reaches its
slot long after its pop (the process stood still meanwhile) is renewed before it starts,
as the serial worker's held jobs are: its lease may have run out and another worker
taken it. An idle slot thread also serves the sync calls of an `async def` job the event
loop runs itself (`loop_jobs`, `lent_thread`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

import redis
from django.db import connections

from .. import coroutines
from ..core import Job
from .held import Held, still_ours
from .interrupt import Interrupter
from .lent_thread import Loan
from .log_fields import job_fields
from .loop_thread import LoopThread, SlotCoroutines
from .renewals import Renewals
from .report import Outcome
from .runner import JobRunner

logger = logging.getLogger("django_qless.worker")

#: What a slot calls with each job it ran (the job, its outcome, how long it ran); returns
#: the job the slot runs next, if any.
Finished = Callable[[Job, Outcome, float], "Held | None"]
#: Builds a slot's runner around its interrupter.
RunnerFor = Callable[[Interrupter], JobRunner]


class Slots:
    """N slot threads taking jobs from one hand-off queue; counts the busy ones."""

    def __init__(self, size: int, name: str, monitor: Renewals, runner_for: RunnerFor,
                 finished: Finished, settle: Callable[[], None]) -> None:
        self.size = size
        self.name = name
        self.monitor = monitor
        self.runner_for = runner_for
        self.finished = finished
        #: Settles what a slot left owed (a completion sent without waiting) before it is
        #: free again.
        self.settle = settle
        #: The event loop of every `async def` job of the process.
        self.loops = LoopThread(name)
        self.busy = 0
        #: Jobs that caught their interruption and returned (logged; on the worker page).
        self.swallowed = 0
        self._changed = threading.Condition()
        self._handoff: queue.SimpleQueue[Held | Loan | None] = queue.SimpleQueue()
        #: Set when a job ends; the idle worker's sleep ends on it (cleared before a pop).
        self.freed = threading.Event()
        self._threads = [threading.Thread(target=self._serve, daemon=True,
                                          name=f"qless-slot-{name}-{index}")
                         for index in range(size)]

    def start(self) -> None:
        """Start the slot threads."""
        for thread in self._threads:
            thread.start()

    @property
    def free(self) -> int:
        """Slots without a job."""
        with self._changed:
            return self.size - self.busy

    def submit(self, held: Held) -> None:
        """Give a popped job to a free slot (the caller checked `free`)."""
        self.reserve()
        self._handoff.put(held)

    def reserve(self) -> None:
        """Count a slot busy: a job is handed to a thread, or to the loop (`loop_jobs`)."""
        with self._changed:
            self.busy += 1

    def release(self, count: int = 1) -> None:
        """Jobs ended: their slots are free again, and the idle worker is woken to fill
        them (all at once: one pop for the slots of jobs that ended together)."""
        with self._changed:
            self.busy -= count
            self._changed.notify_all()
        self.freed.set()

    def swallowed_one(self) -> None:
        """Count a job that caught its interruption and went on."""
        with self._changed:
            self.swallowed += 1

    def lend(self, loan: Loan) -> None:
        """Lend an idle slot thread to a loop job's sync calls (its slot is already busy,
        so a thread is free)."""
        self._handoff.put(loan)

    def wait_freed(self, timeout: float) -> None:
        """Block until a slot is free (or `timeout` passes)."""
        with self._changed:
            if self.busy >= self.size:
                self._changed.wait(timeout)

    def drain(self, give_up: Callable[[], bool]) -> None:
        """Block until no job runs, or `give_up()` says to stop waiting."""
        with self._changed:
            while self.busy and not give_up():
                self._changed.wait(0.1)

    def close(self, timeout: float = 5.0) -> None:
        """End the slot threads (each closes its database connections) and the loop; a
        thread still blocked in a job is left to end with the process."""
        for _ in self._threads:
            self._handoff.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self.loops.close()

    def _serve(self) -> None:
        """A slot thread: run the jobs handed to it until told to end."""
        interrupter = Interrupter(use_signals=False)
        runner = self.runner_for(interrupter)
        self.monitor.slot(interrupter)
        coroutines.install(SlotCoroutines(self.loops, interrupter))
        try:
            while (work := self._handoff.get()) is not None:
                if isinstance(work, Loan):
                    work.serve(runner.databases)
                else:
                    held: Held | None = work
                    while held is not None:
                        held = self._run(runner, interrupter, held)
        finally:
            # Django's connections are per thread: this thread's would outlive it.
            connections.close_all()

    def _run(self, runner: JobRunner, interrupter: Interrupter, held: Held) -> Held | None:
        """Run one job to its end and report it; the job the slot runs next, else None
        once the slot is free again."""
        job = held.job
        started = time.monotonic()
        following = None
        try:
            outcome = self._start(runner, interrupter, held)
            following = self.finished(job, outcome, runner.last_duration)
        except Exception:
            # A bug must not lose the slot: the job's lock expires and qless hands it out.
            logger.exception("qless worker %s: unexpected error running job %s (%.1f s)",
                             self.name, job.jid, time.monotonic() - started, extra=job_fields(job))
        finally:
            if following is None:
                self._settle()
                self.release()
        return following

    def _settle(self) -> None:
        """Settle what this slot owes before it is free (normally nothing by now)."""
        try:
            self.settle()
        except Exception:
            logger.exception("qless worker %s: could not settle a slot's last completion",
                             self.name)

    def _start(self, runner: JobRunner, interrupter: Interrupter, held: Held) -> Outcome:
        """Run the job if it is still ours; what became of it."""
        job = held.job
        runner.last_duration = 0.0
        try:
            if not still_ours(held, self.name):
                return Outcome.LOCK_LOST
        except redis.RedisError as exc:
            logger.warning("qless worker %s: could not renew job %s before its start (%s); "
                           "not started: its lock expires and qless hands it out again",
                           self.name, job.jid, exc, extra=job_fields(job))
            return Outcome.UNREPORTED
        outcome = runner.run(job, max(float(job.expires) - job.client.now(), 1.0))
        if interrupter.pending is not None and outcome is Outcome.SUCCEEDED:
            self.swallowed_one()
            logger.warning("qless worker %s: job %s swallowed its interruption (%s) and "
                           "returned", self.name, job.jid, interrupter.pending.reason,
                           extra=job_fields(job))
        return outcome
