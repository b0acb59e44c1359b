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
from ..core import Client, Job, LockLostError, QlessError, Queue
from ..core.client import default_worker_name
from ..exceptions import QlessConfigurationError
from ..registry import autodiscover
from .ahead import Ahead, Held, Typical
from .health import ClockWatch, check_startup
from .interrupt import Interrupter
from .memory import rss_mb
from .monitor import RECENT_TTL, Monitor
from .options import WorkerOptions
from .order import QueueOrder
from .pipeline import Reply, RoundTrips, ScriptMissing
from .runner import COMPLETING, JobRunner, Reported, complete_now, hand_back
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
            put_memory_limit=base.memory.limit,
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
            on_long_job=self.waker.quiet, on_held_too_long=self._release_held,
        )
        self.runner = JobRunner(options, self.monitor, self.interrupter, self.name)
        self.runner.complete = self._complete_and_pop
        self.trips = RoundTrips(self.client)
        self.ahead = Ahead(self.client, self.trips)
        self.typical = Typical()
        self.handlers = SignalHandlers(self.stop, self.name)
        self.clock = ClockWatch(self.client, self.order.queues)
        #: What `run()` returns: 1 once the worker stopped itself over a stepped clock.
        self.exit_status = 0
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
        return self.exit_status

    def run_once(self) -> bool:
        """Pop one job and run it to its end; False when every queue was empty."""
        popped = self._next_job()
        if popped is None:
            return False
        self.waker.popped()
        lease = max(float(popped.expires) - self.client.now(), 1.0)
        outcome = self.runner.run(popped, lease)
        # The job's own run time: a slow link to Redis must not turn popping ahead off.
        self.typical.observe(self.runner.last_duration)
        self.jobs_run += 1
        if outcome != COMPLETING:  # else counted when qless answers
            self.outcomes[outcome] += 1
        return True

    def shutdown(self) -> None:
        """Stop the monitor, deregister, restore signal handlers, close DB connections."""
        logger.info("qless worker %s: stopping (%s)", self.name, self.stop.reason or "error")
        self._settle_replies()
        self._give_back_held("worker shutdown")
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
            if self._clock_stepped():
                break
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
            self._settle_replies()
            if self.options.burst:
                self.stop.request("queues empty (burst)")
            elif not self.waker.listen():
                # Already listening: nothing was put since, so sleep. (Right after
                # subscribing, pop once more first: a put may have come just before.)
                self.waker.sleep(round_started)

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

    def _complete_and_pop(self, job: Job, reported: Reported) -> str:
        """Complete `job`, popping ahead in the same round trip.

        With a job already held (or on its way) the completion is only sent: the worker
        starts that job at once and the answer is handled when read (`COMPLETING`).
        Otherwise it waits for the answer and the pop, which brings the next job.
        """
        self._check_limits(running=1)
        if self.stop.requested:
            self._settle_replies()
            return complete_now(job, reported)
        complete = ("complete", [job.jid, self.name, job.queue_name, job.raw_data])
        in_hand = self.ahead.in_hand()
        if in_hand:
            calls: list[tuple[str, list[Any]]] = [complete]
            replies = [Reply(lambda value: self._answered(job, reported, value), deferred=True)]
            for queue, count in self._asks(self._extra(self.jobs_run + 2, in_hand - 1)):
                pop, receive = self.ahead.ask(queue, count)
                calls.append(pop)
                replies.append(receive)
            self.trips.send(calls, replies)
            return COMPLETING
        asks = self._asks(1 + self._extra(self.jobs_run + 2, 0))
        pops = [("pop", [queue.name, self.name, count]) for queue, count in asks]
        try:
            completed, *popped = self.trips.call_many([complete, *pops])
        except ScriptMissing:
            self._settle_replies()
            return complete_now(job, reported)  # loads the script again
        for (queue, _), reply in zip(asks, popped, strict=True):
            if isinstance(reply, Exception):
                logger.warning("qless worker %s: pop from %s failed: %s", self.name, queue.name,
                               reply)
            else:
                self.ahead.hold(self.client.jobs_from_json(reply))
        if not self.ahead.held:
            # No job in hand: the worker pops the plain way next, maybe after a sleep.
            self._settle_replies()
        if isinstance(completed, Exception):
            return reported(completed)
        job.state = str(completed)
        return reported(None)

    def _answered(self, job: Job, reported: Reported, value: Any) -> None:
        """qless answered a completion sent without waiting: report it and count the outcome."""
        try:
            if isinstance(value, ScriptMissing):
                outcome = complete_now(job, reported)  # nothing ran: complete it the plain way
            elif isinstance(value, BaseException):
                outcome = reported(value)
            else:
                job.state = str(value)
                outcome = reported(None)
        except Exception:
            logger.exception("qless worker %s: could not report job %s", self.name, job.jid)
            outcome = "unreported"
        self.outcomes[outcome] += 1

    def _next_job(self) -> Job | None:
        """A held job (in pop order) if there is one, else the next from the queues."""
        while (held := self.ahead.next()) is not None:
            self.trips.collect()  # answers to earlier completions: their signals come first
            if self._still_ours(held):
                return held.job
        # Settle every completion first: this pop must see the jobs they released.
        self._settle_replies()
        return self._pop()

    def _still_ours(self, held: Held) -> bool:
        """A job held a while is heartbeated before it starts: it may have been lost since."""
        waited = time.monotonic() - held.since
        if waited < min(RECENT_TTL, held.lease / 2):
            return True
        try:
            held.job.heartbeat()
        except LockLostError as exc:
            logger.info("qless worker %s: held job %s is no longer ours: %s", self.name,
                        held.job.jid, exc.message)
            self.outcomes["lock lost"] += 1
            return False
        return True

    def _extra(self, number: int, in_hand: int) -> int:
        """How many jobs to pop ahead, when the next to start is job `number` of this worker
        and `in_hand` more are held or on their way after it."""
        if not self.typical.short:
            return 0
        extra = self.options.prefetch - in_hand
        if self.options.max_jobs is not None:
            extra = min(extra, self.options.max_jobs - number - in_hand)
        return max(extra, 0)

    def _asks(self, count: int) -> list[tuple[Queue, int]]:
        """The pops that ask for `count` jobs: one from the first queue when `ordered`; else
        one job per queue in turn (round-robin moves on at once, as if each gave one)."""
        if count <= 0:
            return []
        order = self.order.round()
        if self.options.strategy == "ordered":
            return [(order[0], count)]
        asks = []
        for number in range(count):
            queue = order[number % len(order)]
            self.order.served(queue)
            asks.append((queue, 1))
        return asks

    def _settle_replies(self) -> None:
        """Read and handle every reply owed, and give the kept connection back to the pool."""
        try:
            self.trips.release()
        except redis.RedisError as exc:
            # Each call still owed an answer has been given this error (reported as such).
            logger.warning("qless worker %s: connection lost with answers owed (%s)", self.name,
                           exc)
        self.trips.collect()

    def _release_held(self) -> None:
        """The running job is long: give back the jobs held behind it (monitor thread)."""
        self._give_back_held("held behind a long job")

    def _give_back_held(self, reason: str) -> None:
        """Put every held job back in its queue (they were popped but never started)."""
        try:
            jobs = self.ahead.take_all()
        except redis.RedisError as exc:
            logger.warning("qless worker %s: could not read the jobs popped ahead (%s); their "
                           "locks will expire", self.name, exc)
            return
        for job in jobs:
            try:
                hand_back(job, self.name, reason)
            except (redis.RedisError, QlessError) as exc:
                logger.warning("qless worker %s: could not give back job %s (%s); its lock "
                               "will expire", self.name, job.jid, exc)

    def _pop(self) -> Job | None:
        """The next job from the first queue (in strategy order) that has one."""
        count = 1
        if self.options.strategy == "ordered":  # other orders take one job per queue in turn
            count += self._extra(self.jobs_run + 1, 0)
        for queue in self.order.round():
            jobs = queue.pop(count)
            if jobs:
                self.order.served(queue)
                self.ahead.hold(jobs[1:])
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
        self._settle_replies()
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
