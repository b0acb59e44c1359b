"""The worker's presence: who it is and what it is doing, published for the admin.

Published from the monitor thread every `INTERVAL` seconds under a key of django_qless's
own that expires after `TTL` (see `core.presence`), so a worker that stops reporting
(killed, frozen, cut off) disappears from the live list by itself. The same round trip
adds the jobs finished since the last one to the live overview's throughput and claims
the minute's depth sample (`core.live`): the job loop pays nothing for either.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence

import redis

from .. import __version__
from ..core import Client, QlessError
from ..core.fn_metrics import add_functions
from ..core.live import add_throughput, claim_depth, fill_depth
from ..core.presence import Presence, RunningJob, add_publication, add_withdrawal
from .fn_tally import FunctionTally
from .name_claim import claim
from .rss import rss_mb
from .self_report import busiest_klasses, cpu_seconds, load_average
from .state import RunningJob as Running
from .throughput import Tally

logger = logging.getLogger("django_qless.worker")

#: Seconds between two publications.
INTERVAL = 5.0
#: Seconds a publication stays readable: three missed ones mark the worker as silent.
TTL = 3 * INTERVAL
#: A job running this long is published without waiting for the interval (short jobs are
#: not: a publication per job would cost a round trip on the hot path).
LONG_JOB = 1.0


class PresenceReporter:
    """Publishes this process' presence; never raises into the monitor thread."""

    def __init__(self, client: Client, queues: tuple[str, ...],
                 current: Callable[[], Running | None],
                 counts: Callable[[], tuple[int, int]], tally: Tally | None = None,
                 settings: tuple[tuple[str, str], ...] = (),
                 klass_outcomes: Mapping[tuple[str, str], int] | None = None,
                 functions: FunctionTally | None = None) -> None:
        self.client = client
        #: Jobs by klass with run and wait times, added with each publication.
        self.functions = functions if functions is not None else FunctionTally()
        self.settings = settings
        #: Live counts of (klass, outcome), kept by the job thread.
        self.klass_outcomes: Mapping[tuple[str, str], int] = (
            klass_outcomes if klass_outcomes is not None else {})
        self.tally = tally if tally is not None else Tally()
        self.queues = queues
        self.current = current
        #: Every running job, when the process runs several at once (else `current`).
        self.running_jobs: Callable[[], Sequence[Running]] | None = None
        #: How many jobs swallowed their interruption (counted with `--concurrency N`).
        self.swallowed: Callable[[], int] = lambda: 0
        #: Who paused the worker from the admin (None while it pops).
        self.paused_by: Callable[[], str | None] = lambda: None
        self.counts = counts
        self.started = time.time()
        self.host = socket.gethostname()
        self._next = 0.0
        self._shown: str | None = None

    def soon(self) -> None:
        """Publish at the monitor's next tick (a pause or resume is shown at once)."""
        self._next = 0.0

    def claim(self) -> None:
        """The first publication, at start: refused (`WorkerNameInUseError`) while another
        live process holds this worker's name."""
        claim(self.client, self.snapshot(), TTL)

    def maybe_publish(self) -> None:
        """Publish when `INTERVAL` has passed, or a job has run `LONG_JOB` unpublished."""
        now = time.monotonic()
        running = next(iter(self._running()), None)
        long_job = (running is not None and running.job.jid != self._shown
                    and now - running.started >= LONG_JOB)
        if now < self._next and not long_job:
            return
        self._next = now + INTERVAL
        self._shown = running.job.jid if running is not None else None
        now_wall = self.client.now()
        taken = self.tally.take()
        by_klass = self.functions.take()
        try:
            pipe = self.client.redis.pipeline(transaction=True)
            add_publication(pipe, self.snapshot(), TTL)
            add_throughput(pipe, taken, now_wall)
            add_functions(pipe, by_klass, now_wall)
            claim_depth(pipe, now_wall)
            claimed = bool(pipe.execute()[-1])
        except (redis.RedisError, QlessError, OSError) as exc:
            # Reporting is best effort: the job loop has its own handling of a lost Redis.
            # What was counted goes with the next publication instead.
            self.tally.give_back(taken)
            self.functions.give_back(by_klass)
            logger.debug("qless worker %s: presence not published: %s",
                         self.client.worker_name, exc)
            return
        if claimed:
            self.sample_depth(now_wall)

    def sample_depth(self, now_wall: float) -> None:
        """Fill in the minute's depth sample this process claimed (once a minute per Redis)."""
        try:
            fill_depth(self.client, self.client.queues(), now_wall)
        except (redis.RedisError, QlessError, OSError) as exc:
            logger.debug("qless worker %s: queue depths not sampled: %s",
                         self.client.worker_name, exc)

    def snapshot(self) -> Presence:
        """This process, now."""
        done, failed = self.counts()
        wall, now = time.time(), time.monotonic()
        jobs = tuple(RunningJob(running.job.jid, running.job.klass,
                                wall - (now - running.started))
                     for running in self._running())
        return Presence(
            name=self.client.worker_name, host=self.host, pid=os.getpid(),
            version=__version__, queues=self.queues, started=self.started, seen=time.time(),
            done=done, failed=failed, rss_bytes=int(rss_mb() * 1_048_576), running=jobs,
            load=load_average(), cpu_seconds=cpu_seconds(), settings=self.settings,
            # dict() copies a Counter in one C call: the job thread may add a klass meanwhile.
            klasses=busiest_klasses(dict(self.klass_outcomes)), swallowed=self.swallowed(),
            paused_by=self.paused_by() or "",
        )

    def _running(self) -> Sequence[Running]:
        """The running jobs, oldest first (at most one in a serial worker)."""
        if self.running_jobs is not None:
            return self.running_jobs()
        running = self.current()
        return () if running is None else (running,)

    def withdraw(self) -> None:
        """A clean stop: remove the presence now rather than letting it expire, and add the
        jobs finished since the last publication."""
        taken = self.tally.take()
        by_klass = self.functions.take()
        try:
            pipe = self.client.redis.pipeline(transaction=True)
            now_wall = self.client.now()
            add_withdrawal(pipe, self.client.worker_name)
            add_throughput(pipe, taken, now_wall)
            add_functions(pipe, by_klass, now_wall)
            pipe.execute()
        except (redis.RedisError, QlessError, OSError) as exc:
            logger.debug("qless worker %s: presence not withdrawn: %s",
                         self.client.worker_name, exc)
