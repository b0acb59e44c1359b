"""The worker: pop a job from its queues, run it, repeat; sleep on events when idle."""

from __future__ import annotations

import logging
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import redis
from django.db import close_old_connections

from .. import signals
from ..connection import aliases_for_queues, get_client
from ..core import Client, Job, QlessError, Queue
from ..core.client import default_worker_name
from ..exceptions import QlessConfigurationError
from ..registry import autodiscover
from .health import check_startup
from .interrupt import Interrupter
from .memory import rss_mb
from .monitor import Monitor
from .options import WorkerOptions
from .order import QueueOrder
from .pipeline import RoundTrips, ScriptMissing
from .runner import JobRunner
from .shutdown import SignalHandlers
from .state import StopState
from .wakeup import SLICE, Waker

logger = logging.getLogger("django_qless.worker")

#: Pause after a Redis error in the loop before trying again.
ERROR_PAUSE = 1.0
#: How often (seconds) resident memory is measured for `max_memory_mb`.
MEMORY_CHECK_EVERY = 1.0


class Worker:
    """A serial qless worker: one job at a time, in the thread that calls `run()`."""

    def __init__(self, options: WorkerOptions, *, client: Client | None = None) -> None:
        if not options.queues:
            raise QlessConfigurationError("the worker needs at least one queue")
        self.options = options
        base = client if client is not None else _client_for(options.queues)
        # Our own client on the shared connection pool, so every command carries our name.
        self.client = Client(
            base.redis,
            clock=_offset(base.clock, options.clock_offset),
            worker_name=options.name or default_worker_name(),
            max_payload_bytes=base.max_payload_bytes,
        )
        self.name = self.client.worker_name
        self.order: QueueOrder[Queue] = QueueOrder(
            [self.client.queue(name) for name in options.queues], options.strategy
        )
        self.stop = StopState()
        self.interrupter = Interrupter(use_signals=options.handle_signals)
        self.waker = Waker(self.client, options.queues, options.poll_interval,
                           lambda: self.stop.requested)
        self.monitor = Monitor(
            self.client, self.interrupter, self.stop,
            shutdown_timeout=options.shutdown_timeout, parent_pid=options.parent_pid,
            on_long_job=self.waker.quiet,
        )
        self.runner = JobRunner(options, self.monitor, self.interrupter, self.name)
        self.runner.complete = self._complete_and_pop
        self.trips = RoundTrips(self.client)
        self.handlers = SignalHandlers(self.stop, self.name)
        #: A job popped in the same round trip as the previous job's completion.
        self._next: Job | None = None
        self.jobs_run = 0
        self.outcomes: Counter[str] = Counter()
        self._memory_checked = 0.0

    def __repr__(self) -> str:
        return f"<Worker {self.name} on {', '.join(self.options.queues)}>"

    # Lifecycle.

    def check(self) -> None:
        """Refuse to start on a Redis or clock that could lose jobs, or a bad lease config."""
        # Reads every queue's lease, so a bad `<queue>-heartbeat` is refused here too.
        check_startup(self.client, self.order.queues)

    def startup(self) -> None:
        """Check the configuration, install signal handlers, start the monitor thread."""
        autodiscover()
        self.check()
        if self.options.handle_signals:
            self.handlers.install()
            self.interrupter.install()
        self.monitor.start()
        if not self.monitor.wait_subscribed(5.0):
            logger.warning("qless worker %s: lock-loss events not subscribed yet", self.name)
        self._startup_delay()
        logger.debug("qless worker %s: queues %s (%s), pid %s", self.name,
                    ", ".join(self.options.queues), self.options.strategy, os.getpid())
        signals.worker_started.send(sender=self, worker=self.name, queues=self.options.queues)

    def run(self) -> int:
        """Work until stopped (signal, burst, limits); returns the exit status."""
        self.startup()
        try:
            self._loop()
        finally:
            self.shutdown()
        return 0

    def run_once(self) -> bool:
        """Pop one job and run it to its end; False when every queue was empty."""
        popped, self._next = self._next, None
        if popped is None:
            popped = self._pop()
        if popped is None:
            return False
        self.waker.popped()
        lease = max(float(popped.expires) - self.client.now(), 1.0)
        outcome = self.runner.run(popped, lease)
        self.jobs_run += 1
        self.outcomes[outcome] += 1
        return True

    def shutdown(self) -> None:
        """Stop the monitor, deregister, restore signal handlers, close DB connections."""
        logger.info("qless worker %s: stopping (%s)", self.name, self.stop.reason or "error")
        self.trips.release()
        self._give_back_next()
        self.monitor.halt()
        self.waker.close()
        try:
            self.client.workers.deregister(self.name)
        except redis.RedisError:
            logger.exception("qless worker %s: could not deregister", self.name)
        self.interrupter.uninstall()
        self.handlers.restore()
        close_old_connections()
        logger.debug("qless worker %s: %s jobs run", self.name, self.jobs_run)
        signals.worker_stopped.send(sender=self, worker=self.name, queues=self.options.queues)

    # The loop.

    def _loop(self) -> None:
        """Pop and run until asked to stop; sleep on events when there is nothing to do."""
        while not self.stop.requested:
            round_started = self.client.now()
            try:
                ran = self.run_once()
            except redis.RedisError as exc:
                logger.warning("qless worker %s: Redis error (%s); retrying in %ss",
                               self.name, exc, ERROR_PAUSE)
                self._pause(ERROR_PAUSE)
                continue
            except Exception:
                # A bug must not kill the worker: the job's lock expires and qless hands
                # it out again (and fails it once its retries are spent).
                logger.exception("qless worker %s: unexpected error", self.name)
                self._pause(ERROR_PAUSE)
                continue
            if ran:
                self._check_limits()
                continue
            self.trips.release()
            if self.options.burst:
                self.stop.request("queues empty (burst)")
            elif not self.waker.listen():
                # Already listening: nothing was put since, so sleep. (Right after
                # subscribing, pop once more first: a put may have come just before.)
                self.waker.sleep(round_started)

    def _complete_and_pop(self, job: Job) -> None:
        """Complete `job` and, in the same round trip, pop the next one from the first queue."""
        self._check_limits(running=1)
        if self.stop.requested:
            self.trips.release()
            job.complete()
            return
        queue = self.order.round()[0]
        calls: list[tuple[str, list[Any]]] = [
            ("complete", [job.jid, self.name, job.queue_name, job.raw_data]),
            ("pop", [queue.name, self.name, 1]),
        ]
        try:
            completed, popped = self.trips.call_many(calls)
        except ScriptMissing:
            self.trips.release()
            job.complete()  # loads the script again; the next round pops as usual
            return
        if isinstance(popped, Exception):
            logger.warning("qless worker %s: pop from %s failed: %s", self.name, queue.name, popped)
        else:
            jobs = self.client.jobs_from_json(popped)
            if jobs:
                self._next = jobs[0]
                self.order.served(queue)
        if self._next is None:
            # No job in hand: the worker pops the plain way next, maybe after a sleep.
            self.trips.release()
        if isinstance(completed, Exception):
            raise completed
        job.state = str(completed)

    def _give_back_next(self) -> None:
        """A job popped along with a completion but not started: put it back unchanged."""
        job, self._next = self._next, None
        if job is None:
            return
        try:
            job.requeue()
        except (redis.RedisError, QlessError) as exc:
            logger.warning("qless worker %s: could not give back job %s (%s); its lock will "
                           "expire", self.name, job.jid, exc)

    def _pop(self) -> Job | None:
        """The next job from the first queue (in strategy order) that has one."""
        for queue in self.order.round():
            jobs = queue.pop()
            if jobs:
                self.order.served(queue)
                return jobs[0]
        return None

    def _check_limits(self, running: int = 0) -> None:
        """Stop after `max_jobs` jobs (counting `running` ones) or above `max_memory_mb`."""
        limit = self.options.max_jobs
        if limit is not None and self.jobs_run + running >= limit:
            self.stop.request(f"max jobs ({limit}) reached")
        ceiling = self.options.max_memory_mb
        now = time.monotonic()
        if ceiling is not None and now - self._memory_checked >= MEMORY_CHECK_EVERY:
            self._memory_checked = now
            used = rss_mb()
            if used > ceiling:
                self.stop.request(f"memory {used:.0f} MiB above max {ceiling} MiB")

    def _startup_delay(self) -> None:
        """Sleep a random fraction of `startup_delay`, so restarted workers do not stampede."""
        if self.options.startup_delay > 0:
            self._pause(random.uniform(0, self.options.startup_delay))  # noqa: S311

    def _pause(self, seconds: float) -> None:
        """Sleep, waking early on a stop request; the kept connection goes back to the pool."""
        self.trips.release()
        deadline = time.monotonic() + seconds
        while not self.stop.requested and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, SLICE))


def _client_for(queues: tuple[str, ...]) -> Client:
    """The client of the one connection all the queues are routed to."""
    grouped = aliases_for_queues(queues)
    if len(grouped) > 1:
        routes = "; ".join(f"{alias}: {', '.join(names)}" for alias, names in grouped.items())
        raise QlessConfigurationError(
            f"a worker serves queues of one connection only, got {routes}; start one worker "
            "per connection"
        )
    return get_client(next(iter(grouped)))


def _offset(clock: Callable[[], float], seconds: float) -> Callable[[], float]:
    """`clock`, moved by `seconds` (unchanged when 0)."""
    if not seconds:
        return clock
    return lambda: clock() + seconds
