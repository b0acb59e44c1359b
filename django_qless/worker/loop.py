"""The worker: ask the fetcher for a job, run it, hand the outcome back; sleep when idle.

Threads: the loop runs in the thread that calls `run()` (the job thread): it fetches, runs
and reports every job there, so job signals are sent there too. The monitor thread (see
`monitor`) renews leases and interrupts that thread; signal handlers only set flags.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections import Counter

import redis
from django.db import close_old_connections

from .. import coroutines, signals
from ..core import Client, Queue
from ..exceptions import QlessConfigurationError
from ..registry import autodiscover
from .aio import JobLoop
from .client import worker_client
from .control import WorkerControl
from .crashes import enable_faulthandler
from .cron_slots import CronSlots
from .fetcher import Fetcher
from .health import ClockWatch, check_startup, shortest_lease
from .interrupt import Interrupter
from .limits import Limits
from .monitor import Monitor
from .monitor_redis import monitor_redis, monitor_timeout, retime
from .options import WorkerOptions
from .order import QueueOrder
from .presence import PresenceReporter
from .report import Outcome, Reporter
from .runner import JobRunner
from .self_report import shown_settings
from .shutdown import SignalHandlers
from .state import StopState
from .wakeup import SLICE, Waker

logger = logging.getLogger("django_qless.worker")

#: Pause after a Redis error in the loop before trying again.
ERROR_PAUSE = 1.0


class Worker:
    """A serial qless worker: one job at a time, in the thread that calls `run()`."""

    def __init__(self, options: WorkerOptions, *, client: Client | None = None) -> None:
        if not options.queues:
            raise QlessConfigurationError("the worker needs at least one queue")
        self.options = options
        self.client = worker_client(options, client)
        self.name = self.client.worker_name
        #: The monitor thread's client: its own connections, whose calls time out well
        #: within a lease (`monitor_redis`); renewals, presence, cron slots, lease checks.
        self.monitor_client = Client(
            monitor_redis(self.client.redis), clock=self.client.clock, worker_name=self.name,
            max_payload_bytes=self.client.max_payload_bytes,
            put_memory_limit=self.client.memory.limit, replica_ack=self.client.replica_ack)
        self.order: QueueOrder[Queue] = QueueOrder(
            [self.client.queue(name) for name in options.queues], options.strategy
        )
        self.stop = StopState()
        #: The admin's orders (pause, resume, stop), heard by the monitor thread.
        self.control = WorkerControl(self.name, self.stop)
        self.limits = Limits(options, self.stop)
        self.interrupter = Interrupter(use_signals=options.handle_signals)
        self.waker = Waker(self.client, options.queues, options.poll_interval,
                           lambda: self.stop.requested or self.control.paused)
        reporter = Reporter(self.name, options.concurrency)
        self.fetcher = Fetcher(self.client, self.order, options, self.stop, reporter,
                               guard_client=self.monitor_client)
        #: What this process publishes about itself for the admin's workers page.
        self.presence = PresenceReporter(
            self.monitor_client, options.queues, lambda: self.monitor.current,
            lambda: (self.outcomes[Outcome.COMPLETED.value], self.outcomes[Outcome.FAILED.value]),
            self.fetcher.tally, shown_settings(options), self.fetcher.klass_outcomes,
            functions=self.fetcher.functions,
        )
        #: Puts the due slot jobs of cron schedules (from the monitor thread, see `run_once`).
        self.crons = CronSlots(self.monitor_client)
        self.monitor = Monitor(
            self.monitor_client, self.interrupter, self.stop,
            shutdown_timeout=options.shutdown_timeout, parent_pid=options.parent_pid,
            waker=self.waker, fetcher=self.fetcher, presence=self.presence,
            crons=self.crons, control=self.control,
        )
        self.runner = JobRunner(options, self.monitor, self.interrupter, reporter)
        #: The event loop of `async def` jobs, one for the worker's life.
        self.job_loop = JobLoop(self.interrupter)
        self.handlers = SignalHandlers(self.stop, self.name)
        self.presence.paused_by = lambda: self.control.paused_by
        self.control.changed = self.presence.soon
        self.clock = ClockWatch(self.client, self.order.queues)
        from ..outbox.drain import BurstDrain  # noqa: PLC0415 - a model: needs the app registry
        from ..outbox.sweeper import Sweeper  # noqa: PLC0415

        #: Puts the outbox rows whose commit-time put never happened (`outbox.sweeper`).
        self.sweeper = Sweeper()
        #: A burst worker's sweep before it calls its queues empty (`outbox.drain`).
        self.drain = BurstDrain() if options.burst else None
        #: What `run()` returns: 1 once the worker stopped itself over a stepped clock.
        self.exit_status = 0

    def __repr__(self) -> str:
        return f"<Worker {self.name} on {', '.join(self.options.queues)}>"

    @property
    def jobs_run(self) -> int:
        """Jobs run so far."""
        return self.fetcher.jobs_run

    @property
    def outcomes(self) -> Counter[str]:
        """How many jobs ended each way (`completed`, `failed`, ...: `Outcome` values)."""
        return self.fetcher.outcomes

    # Lifecycle.

    def check(self) -> None:
        """Refuse to start on a Redis or clock that could lose jobs, or a bad lease config."""
        # Reads every queue's lease, so a bad `<queue>-heartbeat` is refused here too.
        check_startup(self.client, self.order.queues)
        # The monitor's calls time out within a quarter of the shortest lease (at most 1 s).
        retime(self.monitor_client.redis, monitor_timeout(shortest_lease(self.order.queues)[1]))

    def startup(self) -> None:
        """Check the configuration, install signal handlers, start the monitor thread."""
        enable_faulthandler()
        autodiscover()
        self.check()
        self.presence.claim()
        coroutines.install(self.job_loop)
        if self.options.handle_signals:
            self.handlers.install()
            self.interrupter.install()
        self.monitor.start()
        self.sweeper.start()
        if not self.monitor.wait_subscribed(5.0):
            logger.warning("qless worker %s: lock-loss events not subscribed yet", self.name)
        self._startup_delay()
        logger.debug("qless worker %s: queues %s (%s), pid %s", self.name,
                    ", ".join(self.options.queues), self.options.strategy, os.getpid())
        signals.send(signals.worker_started, self, worker=self.name, queues=self.options.queues)

    def run(self) -> int:
        """Work until stopped (signal, burst, limits); returns the exit status."""
        self.startup()
        try:
            self._loop()
        finally:
            self.shutdown()
        return self.exit_status

    def run_once(self) -> bool:
        """Fetch one job, run it and report it; False when every queue was empty."""
        if not self.monitor.is_alive():
            # Called on its own (tests, embedding): no monitor thread puts cron slots.
            self.crons.run()
        job = self.fetcher.next_job()
        if job is None:
            return False
        self.waker.popped()
        lease = max(float(job.expires) - self.client.now(), 1.0)
        outcome = self.runner.run(job, lease)
        # Counting this job, before its completion may pop more: none past --max-jobs.
        self.limits.check(self.jobs_run + 1)
        self.fetcher.finished(job, outcome, self.runner.last_duration)
        return True

    def shutdown(self) -> None:
        """Stop the monitor, deregister, restore signal handlers, close DB connections."""
        logger.info("qless worker %s: stopping (%s)", self.name, self.stop.reason or "error")
        self.fetcher.settle()
        self.fetcher.hand_back_held("worker shutdown")
        self.monitor.halt()
        self.presence.withdraw()
        self.sweeper.halt()
        self.waker.close()
        try:
            self.client.workers.deregister(self.name)
        except redis.RedisError:
            logger.exception("qless worker %s: could not deregister", self.name)
        coroutines.install(None)
        self.job_loop.close()
        self.interrupter.uninstall()
        self.handlers.restore()
        close_old_connections()
        self.monitor_client.redis.close()
        logger.debug("qless worker %s: %s jobs run", self.name, self.jobs_run)
        signals.send(signals.worker_stopped, self, worker=self.name, queues=self.options.queues)

    # The loop.

    def _round(self) -> bool | None:
        """One `run_once`: whether it ran a job, or None after an error (logged, paused)."""
        try:
            return self.run_once()
        except redis.RedisError as exc:
            logger.warning("qless worker %s: Redis error (%s); retrying in %ss",
                           self.name, exc, ERROR_PAUSE)
        except Exception:
            # A bug must not kill the worker: the job's lock expires and qless hands
            # it out again (and fails it once its retries are spent).
            logger.exception("qless worker %s: unexpected error", self.name)
        self._pause(ERROR_PAUSE)
        return None

    def _loop(self) -> None:
        """Pop and run until asked to stop; sleep on events when there is nothing to do."""
        while not self.stop.requested:
            if self._clock_stepped():
                break
            if self.control.paused:
                self._paused()
                continue
            round_started = self.client.now()
            ran = self._round()
            if ran is None:
                continue
            if ran:
                continue
            self.fetcher.settle()
            if self.options.burst:
                self._burst_empty()
            elif not self.waker.listen():
                # Already listening: nothing was put since, so sleep. (Right after
                # subscribing, pop once more first: a put may have come just before.)
                self.waker.sleep(round_started)

    def _paused(self) -> None:
        """Paused by the admin: pop nothing; jobs popped ahead go back to their queues."""
        self.fetcher.settle()
        self.fetcher.hand_back_held("worker paused")
        # Events would pile up for nothing: the worker pops again only once resumed.
        self.waker.quiet()
        time.sleep(SLICE)

    def _burst_empty(self) -> None:
        """Queues empty: stop, unless the outbox had jobs to put (or soon will)."""
        wait = self.drain.step() if self.drain is not None else None
        if wait is None:
            self.stop.request("queues empty (burst)")
        else:
            self._pause(wait)

    def _clock_stepped(self) -> bool:
        """Stop (exit status 1) when the clock has moved too far from Redis' since start-up."""
        problem = self.clock.problem()
        if problem is None:
            return False
        # Its pops and renewals would now judge every lease wrongly; a restart checks again.
        logger.error("qless worker %s: %s; stopping", self.name, problem)
        self.exit_status = 1
        self.stop.request(problem)
        return True

    def _startup_delay(self) -> None:
        """Sleep a random fraction of `startup_delay`, so restarted workers do not stampede."""
        if self.options.startup_delay > 0:
            self._pause(random.uniform(0, self.options.startup_delay))  # noqa: S311

    def _pause(self, seconds: float) -> None:
        """Sleep, waking early on a stop request; the kept connection goes back to the pool."""
        self.fetcher.settle()
        deadline = time.monotonic() + seconds
        while not self.stop.requested and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, SLICE))

