"""The monitor of a worker that runs several jobs at once (`--concurrency N`).

The same thread as the serial worker's `Monitor`, watching every running job instead of
one: each has its own `RunningJob`, `Fence` and `Interrupter` (the slot thread's), so a
lost lock, a refused renewal, a fence or a time limit stops that job alone. One renewal
pass sends the heartbeats of every job that needs one in one pipelined round trip on the
monitor's client (`core.batch.call_many`), so N running jobs cost one round trip per
heartbeat interval, not N.

One job runs at most once at a time here: a job handed out again while its earlier run in
this process is still stopping (a `timeout` or a move gives it to the next pop at once,
and a free slot may make that pop) starts once that run has ended.

Threads: `slot()`, `begin()` and `end()` are called by the slot threads (and by the event
loop for the `async def` jobs it runs itself, `loop_jobs`, each with its own interrupter);
everything else runs in the monitor thread (or the fence watch), as in `Monitor`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from ..core import Job, LockLostError, commands
from .interrupt import (
    Interrupter,
    ShutdownTimeout,
    TimeLimitExceeded,
)
from .log_fields import job_fields
from .monitor import RECENT_TTL, TICK, Monitor
from .round_trip import run_all
from .state import RunningJob

logger = logging.getLogger("django_qless.worker")

#: A renewal pass also renews the jobs whose heartbeat is due within this share of
#: their interval, so jobs started a moment apart share their round trips.
EARLY_SHARE = 0.25
#: Most jids kept as lost here unannounced (`Renewals._lost_here`).
LOST_HERE = 1024


class Renewals(Monitor):
    """Heartbeats, lock-loss events, fences and deadlines for every job a process runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The running jobs by jid, and by the slot thread that runs them (a loop job: by
        #: its interrupter's id).
        self.jobs: dict[str, RunningJob] = {}
        self._threads: dict[int, RunningJob] = {}
        self._interrupters: dict[int, Interrupter] = {}
        #: Notified whenever a job ends (`begin` may wait for an earlier run's end).
        self._ended = threading.Condition(self._lock)
        #: jids whose lease this process lost (or gave up) without hearing of it from
        #: qless yet: a `lock_lost` about one of them may concern that lease, not the run
        #: of the job popped again since (`_about_this_run`).
        self._lost_here: OrderedDict[str, None] = OrderedDict()

    def running(self) -> list[RunningJob]:
        """Every job running now, oldest first."""
        with self._lock:
            return sorted(self.jobs.values(), key=lambda running: running.started)

    # Called from the slot threads.

    def slot(self, interrupter: Interrupter) -> None:
        """The calling slot thread stops its jobs with `interrupter`."""
        with self._lock:
            self._interrupters[threading.get_ident()] = interrupter

    def begin(self, job: Job, lease: float, interval: float | None, time_limit: float | None,
              runner: Interrupter | None = None) -> RunningJob:
        """Start watching a job the calling slot thread (or, on the event loop, the job that
        `runner` interrupts) is about to run, once no earlier run of it is under way here
        (one still stopping after half its lease, or at all on the loop, which must not
        wait: not run)."""
        if not self._earlier_run_ended(job.jid, lease / 2 if runner is None else 0.0):
            logger.warning("qless worker %s: job %s popped again while its earlier run here "
                           "has not stopped yet; not run (its lock expires and qless hands "
                           "it out again)", self.client.worker_name, job.jid, extra=job_fields(job))
            running = self.watching(job, lease, interval, time_limit)
            running.lost = "its earlier run here has not stopped"
            with self._lock:
                self._note_lost(job.jid)
            return running
        running = self.watching(job, lease, interval, time_limit)
        key = runner_key(runner)
        with self._lock:
            running.interrupter = runner or self._interrupters[key]
            self.jobs[job.jid] = running
            self._threads[key] = running
            early = self._recent.pop(job.jid, None)
        if early is not None and time.monotonic() - early[1] < RECENT_TTL:
            running.lost = self._confirm_early(running, early[0])
        if self.fences.is_alive() and running.lost is None and running.fence is not None:
            self.fences.watch(running.fence, lambda fence: self._fenced(running, fence))
        return running

    def end(self, runner: Interrupter | None = None) -> None:
        """Stop watching the calling slot thread's job (or the loop job `runner` interrupts);
        a fence firing later leaves it alone."""
        with self._lock:
            running = self._threads.pop(runner_key(runner), None)
            if running is None:
                return
            self.jobs.pop(running.job.jid, None)
            running.ended = True
            if running.fence is not None:
                self.fences.forget(running.fence)
            if running.lost is not None and not running.lost.startswith(("lock_lost",
                                                                          "canceled")):
                self._note_lost(running.job.jid)  # qless tells of it once the lock expires
            self._ended.notify_all()

    def _note_lost(self, jid: str) -> None:
        """Remember a jid whose lease was lost here unannounced (called under `_lock`)."""
        self._lost_here[jid] = None
        self._lost_here.move_to_end(jid)
        while len(self._lost_here) > LOST_HERE:
            self._lost_here.popitem(last=False)

    def _earlier_run_ended(self, jid: str, timeout: float) -> bool:
        """Wait until no run of `jid` is under way here; False if one still is after
        `timeout` seconds (its thread blocked in a call it cannot leave)."""
        deadline = time.monotonic() + timeout
        with self._ended:
            while jid in self.jobs:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._ended.wait(left)
        return True

    # The monitor thread.

    def _timeout(self) -> float:
        """Until the first heartbeat, time limit or shutdown deadline of any job (at most TICK)."""
        due = [TICK]
        now = time.monotonic()
        for running in self.running():
            if running.interrupted is not None:
                continue
            due.append(running.next_heartbeat - now)
            if running.deadline is not None:
                due.append(running.deadline - now)
            if self.stop.requested_at is not None:
                due.append(self.stop.requested_at + self.shutdown_timeout - now)
        return max(min(due), 0.001)

    def _about_this_run(self, running: RunningJob, event: str) -> bool:
        """A `lock_lost` about a job whose earlier lease this process lost unannounced may
        concern that lease (expired as this worker popped the job again): a renewal tells,
        as for an event read before the run began (`_confirm_early`)."""
        with self._lock:
            earlier = event == "lock_lost" and self._lost_here.pop(running.job.jid, 0) is None
        return not earlier or self._confirm_early(running, event) is not None

    def _running_job(self, jid: str) -> RunningJob | None:
        """The running job of that jid among this process's jobs (called under `_lock`)."""
        return self.jobs.get(jid)

    def _tick_job(self) -> None:
        """Deadlines of every job, then one round trip for the heartbeats that are due."""
        jobs = [running for running in self.running()
                if running.interrupted is None and running.lost is None]
        if not jobs:
            return
        if self.stop.requested and not self._announced:
            self._announced = True
            logger.info("qless worker %s: stopping (%s); waiting up to %ss for %s running "
                        "job(s)", self.client.worker_name, self.stop.reason,
                        self.shutdown_timeout, len(jobs))
        now = time.monotonic()
        stop_at = self.stop.requested_at
        renewable = []
        for running in jobs:
            if running.deadline is not None and now >= running.deadline:
                self._interrupt(running, TimeLimitExceeded)
            elif stop_at is not None and now >= stop_at + self.shutdown_timeout:
                self._interrupt(running, ShutdownTimeout)
            else:
                renewable.append(running)
        if any(now >= running.next_heartbeat for running in renewable):
            # Jobs due soon go along: started a moment apart, they would each cost a
            # round trip of their own at every interval.
            self._heartbeat_all([running for running in renewable if now >= running.next_heartbeat
                                 - running.interval * EARLY_SHARE])

    def _heartbeat_all(self, due: list[RunningJob]) -> None:
        """Renew every due job's lock in one pipelined round trip; a refusal loses that job."""
        now = time.monotonic()
        for running in due:
            running.next_heartbeat = now + running.interval
        if self.fetcher is not None:
            guard = self.fetcher.lease_guard
            guard.poll(force=True)
            if not guard.safe:
                return  # as in `Monitor._heartbeat`: the fences stop the jobs in time
        name = self.client.worker_name
        sent, sent_wall = time.monotonic(), self.client.now()
        replies = run_all(self.client, [commands.heartbeat(running.job.jid, name)
                                          for running in due])
        leases = self.fetcher.lease_guard.leases if self.fetcher is not None else {}
        for running, reply in zip(due, replies, strict=True):
            if isinstance(reply, LockLostError):
                if not running.ended:
                    self._lose(running, f"heartbeat refused: {reply.message}")
            elif isinstance(reply, Exception):
                logger.warning("qless worker %s: heartbeat of job %s failed: %s", name,
                               running.job.jid, reply, extra=job_fields(running.job))
            else:
                running.job.expires = int(reply)
                if running.fence is not None:
                    running.fence.renewed(sent, int(reply) - sent_wall,
                                          leases.get(running.job.queue_name))
                    self.fences.moved(running.fence.deadline)
                self.heartbeats += 1


def runner_key(runner: Interrupter | None) -> int:
    """Whose job it is: the calling slot thread, or the loop job `runner` interrupts."""
    return threading.get_ident() if runner is None else id(runner)
