"""Jobs popped ahead: the worker asks for its next job while it still runs the current one.

A serial worker that pops only when it is free waits a round trip (and Redis' pop) between
every two jobs. Popping ahead hides that wait: the pop goes out with the completion of the
job before, and its reply is read when the worker is ready for the next job. A job held
this way is already the worker's in Redis (locked, leased) but not started: the worker
starts it in pop order, or gives it back (see `Fetcher`) when it has been held too long.

Threads: the worker thread asks, holds and takes the next job; the monitor thread may take
them all (to give them back) while the worker thread runs a long job. Both go through the
batch's lock, which also guards the connection the pop replies are read from.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core import Batch, Client, Command, Job, LockLostError, Queue, Reply, commands
from .log_fields import job_fields
from .monitor import RECENT_TTL

logger = logging.getLogger("django_qless.worker")

#: Pop ahead only while recent jobs ran at most this long on average (seconds): holding a
#: job back behind longer ones would delay it more than the saved round trip is worth.
SHORT_JOB = 0.1
#: Weight of the newest duration in the running average.
SMOOTHING = 0.2


@dataclass
class Held:
    """A popped job that has not started yet."""

    job: Job
    #: When the pop reply was read (monotonic).
    since: float
    #: Seconds its lease had left then.
    lease: float


def still_ours(held: Held, worker_name: str) -> bool:
    """Whether a popped job may start: one held a while (its lease may have run out and
    another worker taken it) is heartbeated first, and is no longer ours if refused."""
    waited = time.monotonic() - held.since
    if waited < min(RECENT_TTL, held.lease / 2):
        return True
    try:
        held.job.heartbeat()
    except LockLostError as exc:
        logger.info("qless worker %s: held job %s is no longer ours: %s", worker_name,
                    held.job.jid, exc.message, extra=job_fields(held.job))
        return False
    return True


class DurationAverage:
    """A running average of how long the worker's job functions take."""

    def __init__(self) -> None:
        self.seconds: float | None = None

    def observe(self, seconds: float) -> None:
        """Add one job's duration."""
        previous = self.seconds
        self.seconds = seconds if previous is None else previous + SMOOTHING * (seconds - previous)

    @property
    def short(self) -> bool:
        """True when recent jobs were short enough to pop ahead of them."""
        return self.seconds is not None and self.seconds <= SHORT_JOB


class HeldJobs:
    """The jobs a worker holds, and the pops whose replies are still on their way."""

    def __init__(self, client: Client, batch: Batch) -> None:
        self.client = client
        self.batch = batch
        self.held: deque[Held] = deque()
        #: Jobs asked for by pops whose reply is unread (at most that many will come).
        self.asked = 0
        # One lock with the connection: the monitor thread reads replies ahead too.
        self.lock = batch.lock

    def in_hand(self) -> int:
        """Jobs held plus jobs asked for: how many may start without another pop."""
        with self.lock:
            return len(self.held) + self.asked

    def ask(self, queues: Sequence[Queue], count: int) -> tuple[Command, Reply]:
        """A pop of `count` jobs from the first of `queues` that has any, to send, and where
        its reply goes (into the held jobs)."""
        names = [queue.name for queue in queues]
        pop = commands.pop_first(names, self.client.worker_name, count)
        return pop, self.expect(queues, count)

    def expect(self, queues: Sequence[Queue], count: int) -> Reply:
        """Where the reply of a pop of `count` jobs from `queues`, sent by the caller, goes."""

        def receive(value: Any) -> None:
            self.asked -= count
            if isinstance(value, BaseException):
                logger.warning("qless worker %s: pop from %s failed: %s",
                               self.client.worker_name, ", ".join(q.name for q in queues), value)
                return
            self.hold(self.client.jobs_from_json(value))

        with self.lock:
            self.asked += count
        return Reply(receive)

    def hold(self, jobs: list[Job]) -> None:
        """Keep popped jobs to start later, in the order given."""
        now, clock = time.monotonic(), self.client.now()
        with self.lock:
            self.held.extend(Held(job, now, float(job.expires) - clock) for job in jobs)

    def next(self) -> Held | None:
        """The oldest held job; waits for a pop on its way when none is held yet."""
        with self.lock:
            self.batch.read(wait=False)
            if not self.held and self.asked:
                self.batch.read(until=lambda: bool(self.held) or not self.asked)
            return self.held.popleft() if self.held else None

    def take_all(self) -> list[Job]:
        """Every held job, the ones on their way included (to give them back)."""
        with self.lock:
            self.batch.read()
            jobs = [held.job for held in self.held]
            self.held.clear()
        return jobs
