"""A worker process that runs up to N jobs at once (`--concurrency N`, N > 1).

Beside the serial `Worker` (which `--concurrency 1` keeps, unchanged): the same pieces,
used per job. The loop pops as many jobs as there are free slots, in one round trip
(one `pop.first` with a count under the `ordered` strategy; one pop per job, pipelined,
under the others, so each takes the next queue in turn), and hands each to a slot
(`slots`); while every slot is busy it does not poll but waits for one to free up. While
the queues are empty it sleeps on the waker as the serial worker does, woken also when a
job ends (a queue's `max-concurrency` may have let one through). `Renewals` renews every
running job's lease in one round trip and stops each job alone. Each job's outcome is
reported by its slot as soon as it ends, with those of the jobs that ended at the same
moment (`completions`). A slot whose job succeeded pops in its completion's own script
call (`complete.pop`) and starts the oldest popped job itself, so a busy worker costs
Redis one call per job and its loop is woken only when a slot stays free. While recent
jobs are short, the loop and those completions also pop `--prefetch` jobs ahead of the
free slots and hold them, so a slot that frees up starts one without a round trip; a
job held for `HOLD_LIMIT` (every slot busy with longer jobs) goes back to its queue, as
in the serial worker. On a stop the loop pops nothing more, gives back what
it holds and waits for the running jobs; the monitor hands back those still running at
the shutdown timeout. An `async def` `@qless_job` is run by the loop itself, with no slot
thread (`loop_jobs`), unless something about it must run in a thread.

With `--isolation process` each slot runs its plain function in a child of its own
(`isolation`: a fork per job), so up to N children run at once, each killed alone at its
hard limit, memory cap, lost lock, fence or shutdown timeout; `async def` jobs and Django
Tasks stay on the process's threads and loop as without isolation.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import redis

from ..core import Batch, Job, LockLostError, QlessError, Queue, commands
from .completions import Asked, Completions
from .fetcher import names, split_answer
from .held import DurationAverage, Held
from .interrupt import Interrupter
from .log_fields import job_fields
from .loop import Worker
from .loop_jobs import LoopJobs
from .monitor import HOLD_LIMIT, TICK
from .options import WorkerOptions
from .renewals import Renewals
from .report import Outcome, hand_back
from .round_trip import run_all
from .runner import JobRunner
from .slots import Slots
from .wakeup import SLICE

logger = logging.getLogger("django_qless.worker")

#: Seconds past the shutdown timeout the worker waits for its interrupted jobs to end
#: before it hands back those still running and exits.
STUCK_GRACE = 0.25
#: Seconds after which the loop settles a completion sent without waiting whose slot is
#: still in its next job (normally the slot settles it as that job ends).
OWED_LIMIT = SLICE


@dataclass
class Owed:
    """A completion a slot sent without waiting, settled once the slot's next job ends."""

    asked: Asked
    job: Job
    duration: float
    #: True when it is a `complete.pop` (its answer pairs the state with the popped jobs).
    pops: bool
    #: When it was sent (monotonic).
    since: float = field(default_factory=time.monotonic)


def build_worker(options: WorkerOptions) -> Worker:
    """The serial worker for `--concurrency 1`, else one that runs N jobs at once."""
    if options.concurrency > 1:
        return PoolWorker(options)
    return Worker(options)


class PoolWorker(Worker):
    """Runs up to `options.concurrency` jobs at once: threads, and tasks on one loop."""

    def __init__(self, options: WorkerOptions) -> None:
        super().__init__(options)
        #: Replaces the serial monitor (never started): the same, for many jobs.
        self.renewals = Renewals(
            self.monitor_client, self.interrupter, self.stop,
            shutdown_timeout=options.shutdown_timeout, parent_pid=options.parent_pid,
            waker=None, fetcher=self.fetcher, presence=self.presence, crons=self.crons,
            control=self.control)
        self.monitor = self.renewals
        self.presence.current = lambda: None
        self.presence.running_jobs = self.renewals.running
        #: Sends the completions, failures and retries of jobs that end together in one
        #: round trip.
        self.completions = Completions(self.client)
        self.slots = Slots(options.concurrency, self.name, self.renewals, self._runner,
                           self._finished, self._settle_owed)
        #: Runs `async def` jobs on the loop without a slot thread (`loop_jobs`).
        self.loop_jobs = LoopJobs(options, self.slots, self.renewals,
                                  self._runner(Interrupter(use_signals=False)),
                                  self.completions, self._completed, self._counted)
        self.presence.swallowed = lambda: self.slots.swallowed
        #: Guards the counts the slot threads update.
        self._counting = threading.Lock()
        #: Guards the queue order: the loop and the slots' completions pop by it.
        self._ordering = threading.Lock()
        #: Orders the completions' sends as their pops were counted (`_post_completion`).
        self._posting = threading.Lock()
        #: Jobs asked for by completions whose answer has not come yet.
        self._asked = 0
        #: Slots whose job ended and that have not taken their next one yet.
        self._ending = 0
        #: By slot thread: the completion it sent without waiting, if any (guarded by
        #: `_counting`).
        self._owed: dict[int, Owed] = {}
        #: Jobs started so far (`--max-jobs` counts them).
        self.started = 0
        #: Jobs popped ahead of the free slots, in pop order: the loop and the slots whose
        #: completions popped them take the oldest first.
        self.held: deque[Held] = deque()
        #: The pops' connection, kept between round trips (only the loop's thread pops).
        self._pops = Batch(self.client)
        #: Pop round trips made (each fills every slot free at that moment).
        self.pop_round_trips = 0
        #: How long recent jobs ran: jobs are popped ahead only while they are short.
        self.durations = DurationAverage()
        #: Jobs popped ahead are taken only as far as this many stay waiting: the slots of
        #: every process of this worker. A queue's last jobs then go to whichever
        #: slot frees up first, not to a hold that waits for a slot of this process while
        #: a slot of another one idles.
        self.keep_waiting = options.processes * options.concurrency
        self.waker.should_stop = lambda: (self.stop.requested or self.slots.freed.is_set()
                                          or self.control.paused)

    def _runner(self, interrupter: Interrupter) -> JobRunner:
        """A slot's runner: its own interrupter and database hygiene, the shared monitor."""
        return JobRunner(self.options, self.renewals, interrupter, self.runner.reporter,
                         send=self.completions.run)

    def startup(self) -> None:
        """As the serial worker, then start the slot threads."""
        super().startup()
        self.slots.start()

    def shutdown(self) -> None:
        """Wait for the running jobs (handed back at the shutdown timeout), then stop."""
        self._give_back_held("worker shutdown")
        self.slots.drain(self._stop_waiting)
        # What the completions that were under way at the stop popped meanwhile (a slot
        # still in its job has not settled its completion sent without waiting).
        self._settle_overdue(limit=0.0)
        self.completions.close()
        self._give_back_held("worker shutdown")
        self._hand_back_stuck()
        self.loop_jobs.close()
        self._pops.release()
        self.completions.close()
        super().shutdown()
        # Idle slot threads end at once; one blocked in a job is not waited for.
        self.slots.close(timeout=0.1 if self.slots.busy else 5.0)

    def _stop_waiting(self) -> bool:
        """True once the running jobs had their shutdown timeout and `STUCK_GRACE` more."""
        if not self.renewals.is_alive():
            return True
        asked = self.stop.requested_at
        return (asked is not None and time.monotonic()
                >= asked + self.options.shutdown_timeout + STUCK_GRACE)

    def _hand_back_stuck(self) -> None:
        """Hand back the jobs still running after their interruption: a thread blocked in
        one call cannot leave it, so the process's exit ends them."""
        for running in self.renewals.running():
            if running.lost is not None:
                continue  # no longer ours: qless hands it out once its lock expires
            logger.error("qless worker %s: job %s did not stop within %ss of its "
                         "interruption (blocked in a call its thread cannot leave); handed "
                         "back to queue %s, it ends with this process", self.name,
                         running.job.jid, STUCK_GRACE, running.job.queue_name,
                         extra=job_fields(running.job))
            try:
                hand_back(running.job, self.name, "worker shutdown", stuck=True)
            except (redis.RedisError, QlessError) as exc:
                logger.warning("qless worker %s: could not give back job %s (%s); its lock "
                               "will expire", self.name, running.job.jid, exc,
                               extra=job_fields(running.job))

    def run_once(self) -> bool:
        """Start held jobs and pop more for the free slots (and ahead of them while jobs are
        short); False when there was nothing to start or hold."""
        claimed = self._claim()
        if claimed <= 0:
            return True
        started = 0
        try:
            self.slots.freed.clear()
            # Jobs popped by completions: those already here, or on their way (a pop more
            # now would hold one job too many once they come).
            self.completions.wait_for(lambda: bool(self.held) or self._asked == 0)
            started = self._start_held(claimed)
            free = claimed - started
            jobs = self._pop(free, self._ahead()) if self.fetcher.lease_guard.safe else []
            if not self.fetcher.lease_guard.safe:
                self._give_back_held("unsafe lease settings")
            now, clock = time.monotonic(), self.client.now()
            for job in jobs:
                self.waker.popped()
                held = Held(job, now, float(job.expires) - clock)
                if free > 0:
                    free -= 1
                    self._start(held)
                    started += 1
                else:
                    self.held.append(held)
            return bool(jobs) or started > 0
        finally:
            if claimed > started:
                with self._counting:
                    self.started -= claimed - started

    def _claim(self) -> int:
        """Count now, as started, the jobs this round may start (`_wanted`): a slot whose
        job ends meanwhile and takes a held one must not take one of them past
        `--max-jobs`. Those not started are given back at the end of the round."""
        with self._counting:
            claimed = self._wanted()
            if claimed > 0:
                self.started += claimed
        return claimed

    def _start(self, held: Held) -> None:
        """Hand a popped job to a free slot (which renews it first if it waited a while);
        `_claim` counted it."""
        if self.loop_jobs.takes(held.job):
            self.loop_jobs.start(held)
        else:
            self.slots.submit(held)

    def _start_held(self, free: int) -> int:
        """Start up to `free` held jobs, oldest first."""
        started = 0
        while started < free and (held := self._take_held()) is not None:
            self._start(held)
            started += 1
        return started

    def _take_held(self) -> Held | None:
        """The oldest held job, or None (a slot may have taken the last one meanwhile)."""
        try:
            return self.held.popleft()
        except IndexError:
            return None

    def _ahead(self) -> int:
        """How many jobs to pop ahead of the free slots: `--prefetch` while jobs are short."""
        if not self.durations.short:
            return 0
        in_hand = len(self.held) + self._asked
        ahead = self.options.prefetch - in_hand
        if self.options.max_jobs is not None:
            ahead = min(ahead, self.options.max_jobs - self.started - in_hand)
        return max(ahead, 0)

    def _give_back_held(self, reason: str) -> None:
        """Put every held job back in its queue (popped, never started)."""
        while (held := self._take_held()) is not None:
            job = held.job
            try:
                hand_back(job, self.name, reason)
            except (redis.RedisError, QlessError) as exc:
                logger.warning("qless worker %s: could not give back job %s (%s); its lock "
                               "will expire", self.name, job.jid, exc, extra=job_fields(job))

    def _held_too_long(self) -> bool:
        """True once the oldest held job has waited `HOLD_LIMIT` for a slot."""
        try:
            return time.monotonic() - self.held[0].since > HOLD_LIMIT
        except IndexError:
            return False

    def _wanted(self) -> int:
        """How many jobs to start: the free slots, none past `--max-jobs`."""
        free = self.slots.free
        if self.options.max_jobs is not None:
            free = min(free, self.options.max_jobs - self.started)
        return free

    def _pop(self, free: int, ahead: int = 0) -> list[Job]:
        """Up to `free` jobs for free slots and `ahead` more to hold (those only as far as
        `keep_waiting` jobs stay waiting), in one round trip, in the strategy's order."""
        if free + ahead <= 0:
            return []
        if self.options.strategy == "ordered":
            asks: list[tuple[Sequence[Queue], int, int]] = [
                (self._pop_order(), free + ahead, ahead)]
        else:
            asks = [(self._pop_order(), 1, int(n >= free)) for n in range(free + ahead)]
        replies = run_all(self.client, [
            commands.pop_first(names(queues), self.name, n, ahead=held, keep=self.keep_waiting)
            for queues, n, held in asks], self._pops)
        self.pop_round_trips += 1
        jobs: list[Job] = []
        for (queues, _, _), reply in zip(asks, replies, strict=True):
            if isinstance(reply, Exception):
                logger.warning("qless worker %s: pop from %s failed: %s", self.name,
                               ", ".join(names(queues)), reply)
                continue
            jobs.extend(self.client.jobs_from_json(reply))
        if jobs and self.options.strategy == "ordered":
            self._served(jobs[0])
        return jobs

    def _pop_order(self) -> Sequence[Queue]:
        """The queues one pop tries, in order; under `round-robin` and `shuffle` the order
        moves on at once, as if the first gave a job (each of their pops asks for one)."""
        with self._ordering:
            queues = self.order.round()
            if self.options.strategy != "ordered":
                self.order.served(queues[0])
        return queues

    def _served(self, job: Job) -> None:
        """Note the queue an `ordered` pop's jobs came from."""
        with self._ordering:
            self.order.served(next(q for q in self.order.queues if q.name == job.queue_name))

    def _finished(self, job: Job, outcome: Outcome, duration: float) -> Held | None:
        """A slot's job ended: complete it now if it succeeded, count it, check the limits;
        the job the slot runs next, if it takes one."""
        # First: whether the completion also pops jobs to hold depends on this one.
        self._observe(duration)
        self._settle_owed()
        with self._counting:
            self._ending += 1
        try:
            if outcome is Outcome.SUCCEEDED:
                if self._may_send_ahead():
                    return self._complete_ahead(job, duration)
                outcome = self._complete(job, duration)
            self._count(job, outcome, duration)
            return self._next_for_slot()
        finally:
            with self._counting:
                self._ending -= 1

    def _counted(self, job: Job, outcome: Outcome, duration: float) -> None:
        """A loop job ended (`loop_jobs`): its run time observed, its outcome counted."""
        self._observe(duration)
        self._count(job, outcome, duration)

    def _observe(self, duration: float) -> None:
        """Add a job's run time to the recent average (jobs are popped ahead while short)."""
        with self._counting:
            self.durations.observe(duration)

    def _count(self, job: Job, outcome: Outcome, duration: float) -> None:
        """Count a job that ended (`--max-jobs`, metrics); check the limits."""
        with self._counting:
            self.fetcher.count(job, outcome, duration)
            self.fetcher.jobs_run += 1
            jobs_run = self.fetcher.jobs_run
        self.limits.check(jobs_run)

    def _complete(self, job: Job, duration: float) -> Outcome:
        """qless `complete`, sent as soon as the job returned (with the reports of the jobs
        that ended at the same moment, `completions`), popping in the same script call
        (`complete.pop`) the job its slot runs next and those to hold."""
        owed = self._post_completion(job, duration, taking=True)
        return self._completed(job, duration, self._state(owed))

    def _may_send_ahead(self) -> bool:
        """Whether a slot may send its completion without waiting for the answer: every
        other slot is busy (an answer left unread would keep the jobs it pops from a free
        slot) and a job is held, or on its way, for it to run next."""
        if not self._may_take() or self.slots.free > 0:
            return False
        self.completions.collect()  # the jobs earlier completions popped, if already here
        return bool(self.held) or self._asked > 0

    def _complete_ahead(self, job: Job, duration: float) -> Held | None:
        """Send the completion (popping the held jobs back up) without waiting and return
        the next held job: the slot starts it at once and settles this completion when it
        ends (`_settle_owed`). With none held yet, the answers of the pops on their way
        are read until one is (not this completion's own, unless they brought nothing);
        None: the slot is free (and settles its completion first)."""
        following = self._next_for_slot()
        owed = self._post_completion(job, duration, taking=following is None)
        with self._counting:
            self._owed[threading.get_ident()] = owed
        if following is None:
            self.completions.wait_for(lambda: bool(self.held) or self._asked == 0)
            following = self._next_for_slot()
        return following

    def _post_completion(self, job: Job, duration: float, *, taking: bool) -> Owed:
        """Send a job's completion, with a pop when jobs are wanted, without waiting."""
        # One at a time from the count to the send: a completion that counts on another's
        # pop for its slot must be answered after it, or its slot frees up meanwhile.
        with self._posting:
            pop = self._pop_with_completion(taking=taking)
            if pop is None:
                command = commands.complete(job.jid, self.name, job.queue_name, job.raw_data)
                return Owed(self.completions.post(command), job, duration, pops=False)
            queues, count, ahead = pop
            asked = self.completions.post(
                commands.complete_pop(job.jid, self.name, job.queue_name, job.raw_data,
                                      names(queues), count, lean=self.fetcher.lean,
                                      ahead=ahead, keep=self.keep_waiting),
                received=partial(self._hold_popped, queues, count, time.monotonic()))
        return Owed(asked, job, duration, pops=True)

    def _state(self, owed: Owed) -> Any:
        """The job's new state qless answered to its completion, or the error."""
        answer = self.completions.answer(owed.asked)
        state = split_answer(answer)[0] if owed.pops else answer
        if not isinstance(state, BaseException):
            owed.job.state = str(state)
        return state

    def _settle_owed(self) -> None:
        """Settle the completion this slot sent without waiting, if any."""
        with self._counting:
            owed = self._owed.pop(threading.get_ident(), None)
        if owed is not None:
            self._settle(owed)

    def _settle_overdue(self, limit: float = OWED_LIMIT) -> None:
        """Settle the completions sent without waiting by slots still in their next job
        after `limit` seconds: a long job must not hold back the signals of the one
        before."""
        now = time.monotonic()
        with self._counting:
            overdue = [thread for thread, owed in self._owed.items()
                       if now - owed.since >= limit]
            settling = [self._owed.pop(thread) for thread in overdue]
        for owed in settling:
            self._settle(owed)

    def _settle(self, owed: Owed) -> None:
        """A completion's outcome (the job's signal) and count, once qless answered."""
        state = self._state(owed)
        self._count(owed.job, self._completed(owed.job, owed.duration, state), owed.duration)

    def _pop_with_completion(self, *, taking: bool
                             ) -> tuple[Sequence[Queue], int, int] | None:
        """The queues, count and jobs ahead a completion pops: a job for each slot about to
        take its next one (this one too when `taking`), and `--prefetch` more to hold while
        jobs are short (the last of the count), less the jobs held or asked for already;
        None for none."""
        if not self._may_take():
            return None
        with self._counting:
            in_hand = len(self.held) + self._asked
            ahead = self.options.prefetch if self.durations.short else 0
            slots = self._ending - (0 if taking else 1)
            count = slots + ahead - in_hand
            if self.options.max_jobs is not None:
                count = min(count, self.options.max_jobs - self.started - in_hand)
            if self.options.strategy != "ordered":
                count = min(count, 1)  # as the loop's pops: one job per queue in turn
            if count <= 0:
                return None
            self._asked += count
        return self._pop_order(), count, max(count - max(slots - in_hand, 0), 0)

    def _hold_popped(self, queues: Sequence[Queue], count: int, sent: float, answer: Any
                     ) -> None:
        """Hold the jobs a completion popped (called in the order the pops were sent); they
        count as held since the pop was sent (its answer may be read later)."""
        _, popped = split_answer(answer)
        jobs: list[Job] = []
        if isinstance(popped, BaseException):
            logger.warning("qless worker %s: pop from %s failed: %s", self.name,
                           ", ".join(names(queues)), popped)
        else:
            jobs = self.client.jobs_from_json(popped)
        clock = self.client.now()
        with self._counting:
            self._asked -= count
            self.held.extend(Held(job, sent, float(job.expires) - clock) for job in jobs)
        if jobs and self.options.strategy == "ordered":
            self._served(jobs[0])
        for _ in jobs:
            self.waker.popped()

    def _may_take(self) -> bool:
        """Whether a slot whose job ended may pop or start another itself."""
        return (not self.stop.requested and not self.control.paused
                and self.fetcher.lease_guard.safe)

    def _next_for_slot(self) -> Held | None:
        """The oldest held job, for the slot whose job just ended to run (None: the
        slot is free); an `async def` one goes to the loop instead."""
        if not self._may_take():
            return None  # held jobs go back to their queues: the loop sees to it
        with self._counting:
            if self.options.max_jobs is not None and self.started >= self.options.max_jobs:
                return None
            held = self._take_held()
            if held is None:
                return None
            self.started += 1
        if self.loop_jobs.takes(held.job):
            self.loop_jobs.start(held)
            return None
        return held

    def _completed(self, job: Job, duration: float, answer: object) -> Outcome:
        """The outcome of a job whose completion qless answered with `answer` (its new
        state, or the error)."""
        error = answer if isinstance(answer, BaseException) else None
        if error is not None and not isinstance(error, (LockLostError, redis.RedisError)):
            # Any other script error: as the serial worker, the job is left to its lock.
            error = redis.RedisError(str(error))
        return self.runner.reporter.completed(job, duration, error)

    def _loop(self) -> None:
        """Fill the free slots; wait for one while all are busy; sleep when nothing comes."""
        while not self.stop.requested:
            if self._clock_stepped():
                break
            if self.control.paused:
                # Running jobs go on in their slots; held ones go back to their queues.
                self._give_back_held("worker paused")
                self.waker.quiet()
                time.sleep(SLICE)
                continue
            self._settle_overdue()
            if self._wanted() <= 0:
                self.slots.wait_freed(SLICE)
                self.completions.collect()  # jobs popped while every slot runs a long one
                if self._held_too_long():
                    self._give_back_held("held behind a long job")
                if self.options.max_jobs is not None and self.started >= self.options.max_jobs:
                    self._drain_then_stop(f"max jobs ({self.options.max_jobs}) reached")
                continue
            round_started = self.client.now()
            ran = self._round()
            if ran is None:
                continue
            if ran:
                continue
            if self.options.burst:
                if self.slots.free < self.slots.size:
                    self.slots.freed.wait(TICK)  # a running job may release more
                else:
                    self._burst_empty()
                continue
            if self.slots.free == self.slots.size:
                # Idle: connections kept until the next job could go half-open meanwhile.
                self._pops.release()
                self.completions.release_idle()
            if not self.waker.listen():
                self.waker.sleep(round_started)

    def _drain_then_stop(self, reason: str) -> None:
        """Every job this process may start has started: wait for them, then stop."""
        self.slots.drain(lambda: self.stop.requested)
        self.stop.request(reason)
