"""Fetching: the worker's next job, popped ahead while jobs are short, and each outcome told.

The loop asks `next_job()` for a job, runs it, and gives the outcome to `finished()`. A job
that succeeded is completed here, in one round trip with the pops of the jobs after it
(see `held`), the first pop in the completion's own script call (`complete.pop`): with a
job already held, the completion is only sent and its answer read when the next job is
due, so the worker does not wait for Redis between two jobs.

Threads: everything runs in the worker's job thread, where the signals of completions are
sent, except `hand_back_held()`, which the monitor thread calls when the running job has
taken `HOLD_LIMIT`; the held jobs and the batch's connection are guarded by one lock.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from functools import partial
from typing import Any

import redis

from ..core import (
    Batch,
    Client,
    Command,
    Job,
    LockLostError,
    QlessError,
    Queue,
    Reply,
    ScriptNotLoadedError,
    commands,
)
from .fn_tally import FunctionTally
from .health import LeaseGuard
from .held import DurationAverage, Held, HeldJobs, still_ours
from .log_fields import job_fields
from .options import WorkerOptions
from .order import QueueOrder
from .report import Outcome, Reporter, hand_back
from .state import StopState
from .targets import runs_tasks
from .throughput import Tally

logger = logging.getLogger("django_qless.worker")

#: The pop half of a `complete.pop` answered with an error: no job reached this worker
#: (a refused completion popped nothing; after a lost connection, what was leased expires).
NOTHING_POPPED = "{}"


class Fetcher:
    """Hands the loop its jobs and reports their outcomes to qless, popping ahead."""

    def __init__(self, client: Client, order: QueueOrder[Queue], options: WorkerOptions,
                 stop: StopState, reporter: Reporter, guard_client: Client | None = None
                 ) -> None:
        self.client = client
        self.name = client.worker_name
        self.order = order
        self.options = options
        self.stop = stop
        self.reporter = reporter
        self.batch = Batch(client)
        self.held = HeldJobs(client, self.batch)
        self.durations = DurationAverage()
        #: Pops wait while the shared lease settings are unsafe (the monitor checks, on
        #: `guard_client`: the monitor's own connections).
        guard = guard_client or client
        self.lease_guard = LeaseGuard(guard, [guard.queue(q.name) for q in order.queues])
        #: Jobs run so far (`--max-jobs` counts them, and the jobs held after them).
        self.jobs_run = 0
        #: How many jobs ended each way, by `Outcome` value.
        self.outcomes: Counter[str] = Counter()
        #: The same by queue, until the presence publication adds them to Redis.
        self.tally = Tally()
        #: The same by klass, with run and wait times (the per-function figures).
        self.functions = FunctionTally()
        #: The same by (klass, outcome), for the workers page.
        self.klass_outcomes: Counter[tuple[str, str]] = Counter()
        #: Jobs popped with a completion come without history and dependents, unless a
        #: Tasks task may be among them (its result is built from the history).
        self.lean = not runs_tasks()

    def next_job(self) -> Job | None:
        """A held job (in pop order) if there is one, else the next from the queues.

        None also while the lease settings are unsafe: held jobs go back to their queue.
        """
        if not self.lease_guard.safe:
            self.settle()
            self.hand_back_held("unsafe lease settings")
            return None
        while (held := self.held.next()) is not None:
            self.batch.collect()  # answers to earlier completions: their signals come first
            if self._still_ours(held):
                return held.job
        # Settle every completion first: this pop must see the jobs they released.
        self.settle()
        return self._pop()

    def finished(self, job: Job, outcome: Outcome, duration: float) -> None:
        """Count how a job ended; one that succeeded is completed (with the next pops)."""
        if outcome is Outcome.SUCCEEDED:
            self._complete(job, duration)
        else:
            self.count(job, outcome, duration)
        # The job's own run time: a slow link to Redis must not turn popping ahead off.
        self.durations.observe(duration)
        self.jobs_run += 1

    def settle(self) -> None:
        """Read and handle every answer owed, and give the kept connection back to the pool."""
        try:
            self.batch.release()
        except redis.RedisError as exc:
            # Each command still owed an answer has been given this error (reported as such).
            logger.warning("qless worker %s: connection lost with answers owed (%s)", self.name,
                           exc)
        self.batch.collect()

    def hand_back_held(self, reason: str) -> None:
        """Put every held job back in its queue (popped but never started); thread-safe."""
        try:
            jobs = self.held.take_all()
        except redis.RedisError as exc:
            logger.warning("qless worker %s: could not read the jobs popped ahead (%s); their "
                           "locks will expire", self.name, exc)
            return
        for job in jobs:
            try:
                hand_back(job, self.name, reason)
            except (redis.RedisError, QlessError) as exc:
                logger.warning("qless worker %s: could not give back job %s (%s); its lock "
                               "will expire", self.name, job.jid, exc, extra=job_fields(job))

    # Completing.

    def _complete(self, job: Job, duration: float) -> None:
        """Complete `job`, popping ahead in the same round trip.

        With a job already held (or on its way) the completion is only sent: the worker
        starts that job at once and the answer is handled when read (`_answered`).
        Otherwise it waits for the answer and the pop, which brings the next job.
        """
        if self.stop.requested:
            self.settle()
            self.count(job, self._complete_alone(job, duration), duration)
            return
        try:
            in_hand = self.held.in_hand()
            if in_hand:
                self._send_ahead(job, duration, in_hand)
            else:
                self.count(job, self._complete_and_pop(job, duration), duration)
        except redis.RedisError as exc:
            self.count(job, self.reporter.completed(job, duration, exc), duration)

    def _send_ahead(self, job: Job, duration: float, in_hand: int) -> None:
        """Send the completion and the pops topping the held jobs up, without waiting."""
        completion = Reply(partial(self._answered, job, duration), deferred=True)
        asks = self._asks(self._extra(self.jobs_run + 2, in_hand - 1))
        if not asks:
            self.batch.send([self._completion(job)], [completion])
            return
        (queues, count), *rest = asks
        calls = [self._complete_pop(job, queues, count)]
        replies = [Reply(partial(self._split, completion, self.held.expect(queues, count)))]
        for queues, count in rest:
            pop, receive = self.held.ask(queues, count)
            calls.append(pop)
            replies.append(receive)
        self.batch.send(calls, replies)

    def _complete_and_pop(self, job: Job, duration: float) -> Outcome:
        """Complete and pop in one round trip, waiting for both answers."""
        asks = self._asks(1 + self._extra(self.jobs_run + 2, 0))
        try:
            answers = self.batch.call_many(self._completion_with(job, asks))
        except ScriptNotLoadedError:
            self.settle()
            return self._complete_alone(job, duration)  # loads the script again
        completed, popped = answers[0], answers[1:]
        if asks:
            completed, first = split_answer(completed)
            popped.insert(0, first)
        for (queues, _), reply in zip(asks, popped, strict=True):
            if isinstance(reply, Exception):
                logger.warning("qless worker %s: pop from %s failed: %s", self.name,
                               ", ".join(names(queues)), reply)
            else:
                self.held.hold(self.client.jobs_from_json(reply))
        if not self.held.held:
            # No job in hand: the worker pops the plain way next, maybe after a sleep.
            self.settle()
        return self._report(job, duration, completed)

    def _complete_alone(self, job: Job, duration: float) -> Outcome:
        """qless `complete` in one round trip of its own (no pop)."""
        try:
            job.complete()
        except (LockLostError, redis.RedisError) as exc:
            return self.reporter.completed(job, duration, exc)
        return self.reporter.completed(job, duration, None)

    def _answered(self, job: Job, duration: float, value: Any) -> None:
        """qless answered a completion sent without waiting: report it and count the outcome."""
        try:
            if isinstance(value, ScriptNotLoadedError):
                outcome = self._complete_alone(job, duration)  # nothing ran: the plain way
            else:
                outcome = self._report(job, duration, value)
        except Exception:
            logger.exception("qless worker %s: could not report job %s", self.name, job.jid,
                             extra=job_fields(job))
            outcome = Outcome.UNREPORTED
        self.count(job, outcome, duration)

    def _report(self, job: Job, duration: float, answer: Any) -> Outcome:
        """What qless's answer to a completion makes of the job (its new state, or an error)."""
        if isinstance(answer, BaseException):
            return self.reporter.completed(job, duration, answer)
        job.state = str(answer)
        return self.reporter.completed(job, duration, None)

    def _completion(self, job: Job) -> Command:
        """The `complete` of a job that succeeded, its data unchanged."""
        return commands.complete(job.jid, self.name, job.queue_name, job.raw_data)

    def _completion_with(self, job: Job, asks: Sequence[tuple[Sequence[Queue], int]]
                         ) -> list[Command]:
        """The completion of `job` and the pops of `asks`; the first pop goes in the same
        script call as the completion (`complete.pop`), which saves Redis a call per job."""
        if not asks:
            return [self._completion(job)]
        (queues, count), *rest = asks
        return [self._complete_pop(job, queues, count),
                *(commands.pop_first(names(q), self.name, n) for q, n in rest)]

    def _complete_pop(self, job: Job, queues: Sequence[Queue], count: int) -> Command:
        """The completion of `job` with a pop of `count` jobs from `queues`, in one call."""
        return commands.complete_pop(job.jid, self.name, job.queue_name, job.raw_data,
                                     names(queues), count, lean=self.lean)

    def _split(self, completion: Reply, popped: Reply, answer: Any) -> None:
        """Hand the two halves of a `complete.pop` answer to their own handlers."""
        state, jobs = split_answer(answer)
        self.batch.deliver(completion, state)
        self.batch.deliver(popped, jobs)

    def count(self, job: Job, outcome: Outcome, duration: float = 0.0) -> None:
        """Count one outcome, in all, by klass and by queue with its run time (for the live
        overview), and by klass with its run and wait times (per-function figures)."""
        self.outcomes[outcome.value] += 1
        self.klass_outcomes[job.klass, outcome.value] += 1
        self.tally.count(job.queue_name, outcome.value, duration)
        self.functions.count(job.klass, job.queue_name, outcome.value, duration, job.waited)

    # Popping.

    def _still_ours(self, held: Held) -> bool:
        """A job held a while is heartbeated before it starts: it may have been lost since."""
        if still_ours(held, self.name):
            return True
        self.count(held.job, Outcome.LOCK_LOST)
        return False

    def _extra(self, number: int, in_hand: int) -> int:
        """How many jobs to pop ahead, when the next to start is job `number` of this worker
        and `in_hand` more are held or on their way after it."""
        if not self.durations.short:
            return 0
        extra = self.options.prefetch - in_hand
        if self.options.max_jobs is not None:
            extra = min(extra, self.options.max_jobs - number - in_hand)
        return max(extra, 0)

    def _asks(self, count: int) -> list[tuple[Sequence[Queue], int]]:
        """The pops that ask for `count` jobs: all from the first queue with jobs when
        `ordered`; else one job at a time, each from the first queue with jobs in a round
        starting one further (round-robin moves on at once, as if each gave one)."""
        if count <= 0 or not self.lease_guard.safe:
            return []
        if self.options.strategy == "ordered":
            return [(self.order.round(), count)]
        asks = []
        for _ in range(count):
            order = self.order.round()
            self.order.served(order[0])
            asks.append((order, 1))
        return asks

    def _pop(self) -> Job | None:
        """The next job from the first queue (in strategy order) that has one: one call
        for any number of queues (`pop.first`)."""
        count = 1
        if self.options.strategy == "ordered":  # other orders take one job per queue in turn
            count += self._extra(self.jobs_run + 1, 0)
        order = self.order.round()
        command = commands.pop_first(names(order), self.name, count)
        jobs = self.client.jobs_from_json(self.client.run(command))
        if not jobs:
            return None
        self.order.served(next(q for q in order if q.name == jobs[0].queue_name))
        self.held.hold(jobs[1:])
        return jobs[0]


def split_answer(answer: Any) -> tuple[Any, Any]:
    """`complete.pop`'s answer as (the completion's, the pop's): an error refused both, so
    the pop then brought nothing."""
    if isinstance(answer, BaseException):
        return answer, NOTHING_POPPED
    state, jobs = answer
    return state, jobs


def names(queues: Sequence[Queue]) -> list[str]:
    """The names of queues, in order."""
    return [queue.name for queue in queues]
