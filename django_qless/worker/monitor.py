"""The monitor thread: renews the running job's lock and watches the worker's channel.

One long-lived daemon thread per worker (nothing is started per job). It blocks on the
worker's own pub/sub channel (`keys.worker_channel`), where qless publishes `lock_lost` and
`canceled` for jobs this worker holds, so a lost lock is seen at once; the same connection
hears the admin's orders (`keys.worker_control`, see `control`). Between messages it
wakes up for the next heartbeat, the time limit (when no timer enforces it) and the
shutdown deadline. While no job runs, it only wakes every `TICK` seconds.
It also re-checks the shared lease settings (`health.LeaseGuard`), whose verdict
holds the fetcher's pops and the renewals while they are unsafe.

Fencing: a job whose lease this worker could not renew (Redis unreachable, replies lost
or late, renewals held by unsafe settings) is stopped before the lock expires, by the
`fence.FenceWatch` thread, which does no I/O and so is never held up by a hanging call.
The job is interrupted (an isolated job's child is killed) and then neither completed
nor failed here: after the expiry qless may hand it to another worker. The monitor's
client is built on `monitor_redis`, so each of its calls times out well within a lease.

Threads: `begin()` and `end()` are called by the worker's job thread; everything else runs
in the monitor thread. From there it interrupts the job thread (`Interrupter`), and acts
on two objects through their thread-safe methods: once the running job has taken
`HOLD_LIMIT` it makes the fetcher give back the jobs held behind it
(`Fetcher.hand_back_held`), and once it has taken `LONG_JOB` it makes the waker stop
listening (`Waker.quiet`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import redis
import redis.client

from ..core import Client, Job, LockLostError, commands, keys
from ..core.control import decode
from ..core.presence import text
from .fence import Fence, FenceWatch
from .interrupt import (
    Interrupter,
    JobInterrupted,
    LeaseExpired,
    LockLost,
    ShutdownTimeout,
    TimeLimitExceeded,
)
from .liveness import PingCheck
from .log_fields import job_fields
from .state import RunningJob, StopState

if TYPE_CHECKING:
    from .control import WorkerControl
    from .cron_slots import CronSlots
    from .fetcher import Fetcher
    from .presence import PresenceReporter
    from .wakeup import Waker

logger = logging.getLogger("django_qless.worker")

#: Longest the thread blocks on the channel; bounds how late the first heartbeat can be.
TICK = 0.5
#: How long to wait before resubscribing after the connection dropped.
RECONNECT_DELAY = 1.0
#: Longest wait for the confirmation of a subscription before going on (it is read later).
SUBSCRIBE_WAIT = 5.0
#: Seconds between PINGs on the channel connection; one unanswered at the next means the
#: connection is dead and the monitor subscribes again (see `liveness`).
PING_EVERY = 5.0
#: A job running longer than this is "long": the waker stops listening meanwhile.
LONG_JOB = 5.0
#: Jobs popped ahead are given back once the running job has taken this long (seconds), so
#: they are started (or back in their queue) well within `RECENT_TTL` of their pop.
HOLD_LIMIT = 1.0
#: Events about jobs that were not (yet) running, kept briefly in case the job starts just
#: after (the event can overtake the pop reply); older ones are stale.
RECENT = 64
RECENT_TTL = 2.0


class Monitor(threading.Thread):
    """Heartbeats, lock-loss and cancellation events, deadlines; interrupts the job thread."""

    def __init__(
        self,
        client: Client,
        interrupter: Interrupter,
        stop: StopState,
        *,
        shutdown_timeout: float,
        parent_pid: int | None = None,
        waker: Waker | None = None,
        fetcher: Fetcher | None = None,
        presence: PresenceReporter | None = None,
        crons: CronSlots | None = None,
        control: WorkerControl | None = None,
    ) -> None:
        super().__init__(name=f"qless-monitor-{client.worker_name}", daemon=True)
        self.client = client
        self.interrupter = interrupter
        self.stop = stop
        self.shutdown_timeout = shutdown_timeout
        self.parent_pid = parent_pid
        self.waker = waker
        self.fetcher = fetcher
        self.presence = presence
        #: Puts the due slot jobs of cron schedules (`cron_slots`).
        self.crons = crons
        #: Carries out the admin's orders (pause, resume, stop).
        self.control = control
        self.current: RunningJob | None = None
        self.heartbeats = 0
        self._recent: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._pubsub: redis.client.PubSub | None = None
        self._subscribed = threading.Event()
        self._ping = PingCheck(PING_EVERY)
        self._announced = False
        self._interrupting = threading.Lock()
        self.channel = keys.worker_channel(client.worker_name)
        self.control_channel = keys.worker_control(client.worker_name)
        #: Stops the jobs whose lease could not be renewed in time.
        self.fences = FenceWatch(client.worker_name)

    def start(self) -> None:
        """Start the thread, and the fence watch with it."""
        self.fences.start()
        super().start()

    # Called from the job thread.

    def begin(self, job: Job, lease: float, interval: float | None, time_limit: float | None
              ) -> RunningJob:
        """Start watching a job that was just popped (its pop is its first renewal)."""
        running = self.watching(job, lease, interval, time_limit)
        with self._lock:
            self.current = running
            early = self._recent.pop(job.jid, None)
        if early is not None and time.monotonic() - early[1] < RECENT_TTL:
            running.lost = self._confirm_early(running, early[0])
        if self.fences.is_alive() and running.lost is None and running.fence is not None:
            self.fences.watch(running.fence, lambda fence: self._fenced(running, fence))
        return running

    def watching(self, job: Job, lease: float, interval: float | None,
                 time_limit: float | None) -> RunningJob:
        """A popped job's `RunningJob`: heartbeat interval, fence and time limit set."""
        every = interval if interval is not None else max(lease / 3, 0.05)
        running = RunningJob(job=job, interval=every)
        # The expiry Redis gave the lock, from the `now` the pop carried: the time the
        # reply took and the job was held are already spent.
        running.fence = Fence(job.jid, lease, float(job.expires) - self.client.now())
        # A job held a while (or renewed with a truncated expiry) may have little of its
        # lease left: renew it halfway to its fence if that comes before the interval.
        running.next_heartbeat = min(running.next_heartbeat,
                                     (running.started + running.fence.deadline) / 2)
        if time_limit:
            running.deadline = running.started + time_limit
        return running

    def _confirm_early(self, running: RunningJob, event: str) -> str | None:
        """Whether an event read before the job started means it is lost: asks Redis.

        The event may be about the job's previous lease: when a lock expires, qless sends
        `lock_lost` to its holder and, after the grace period, may hand the job back to
        that same worker. A heartbeat tells: refused, the job is lost; renewed, it is ours.
        """
        try:
            self._renew(running)
        except LockLostError:
            return event
        except redis.RedisError:
            return event  # cannot tell: treat it as lost, as without the check
        return None

    def end(self) -> None:
        """Stop watching the current job; a fence firing after this leaves it alone."""
        with self._lock:
            running, self.current = self.current, None
            if running is not None:
                running.ended = True
                if running.fence is not None:
                    self.fences.forget(running.fence)

    def wait_subscribed(self, timeout: float) -> bool:
        """Block until the channel subscription is confirmed (events before it are missed)."""
        return self._subscribed.wait(timeout)

    def halt(self, timeout: float = 2.0) -> None:
        """Stop the thread and close its connection."""
        self._halt.set()
        self.fences.halt()
        if self.is_alive() and threading.current_thread() is not self:
            try:
                # Wake the blocking read now instead of at the end of its tick.
                self.client.redis.publish(self.channel, "halt")
            except redis.RedisError:
                pass
            self.join(timeout)
        self._close()

    # The thread.

    def run(self) -> None:
        """Loop until halted: read events, then do whatever is due."""
        while not self._halt.is_set():
            try:
                message = self._read(self._timeout())
                if message is not None:
                    self._on_message(message)
                self._tick()
            except redis.RedisError as exc:
                logger.warning("qless monitor: Redis error (%s); retrying in %ss", exc,
                               RECONNECT_DELAY)
                self._close()
                self._halt.wait(RECONNECT_DELAY)
            except Exception:
                logger.exception("qless monitor: unexpected error")
                self._halt.wait(RECONNECT_DELAY)

    def _timeout(self) -> float:
        """How long the next blocking read may last."""
        timeout = TICK
        running = self.current
        if running is not None and running.interrupted is None:
            now = time.monotonic()
            due = [running.next_heartbeat]
            if running.deadline is not None:
                due.append(running.deadline)
            if self.stop.requested_at is not None:
                due.append(self.stop.requested_at + self.shutdown_timeout)
            timeout = min(timeout, max(min(due) - now, 0.001))
        return timeout

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """One message from the worker channel (subscribing first if needed)."""
        pubsub = self._pubsub
        if pubsub is None:
            pubsub = self._subscribe()
        self._ping.check(pubsub)
        message: dict[str, Any] | None = pubsub.get_message(timeout=timeout)
        if message is not None and message.get("type") == "subscribe":
            self._confirmed(message)  # a confirmation later than `_subscribe` waited
            return None
        if message is not None and self._ping.answered(message):
            return None
        return message

    def _subscribe(self) -> redis.client.PubSub:
        """Subscribe to the worker's channel and wait for the confirmation."""
        pubsub: redis.client.PubSub = self.client.redis.pubsub()  # type: ignore[no-untyped-call,unused-ignore]
        self._pubsub = pubsub
        self._ping.restart()
        pubsub.subscribe(self.channel, self.control_channel)
        # Not past the running job's next heartbeat: the confirmation can also come later.
        deadline = time.monotonic() + min(SUBSCRIBE_WAIT, max(self._timeout(), 0.1))
        while time.monotonic() < deadline:
            message = pubsub.get_message(timeout=0.1)
            if message is not None and message["type"] == "subscribe":
                if self._confirmed(message):
                    break
                continue
            if message is not None:
                self._on_message(message)
        return pubsub

    def _confirmed(self, message: dict[str, Any]) -> bool:
        """Whether a confirmation is the last one (both channels); sets `_subscribed`."""
        if message.get("data") != 2:
            return False
        self._subscribed.set()
        return True

    def _close(self) -> None:
        """Drop the pub/sub connection (the next read subscribes again)."""
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            try:
                pubsub.close()
            except redis.RedisError:
                pass

    def _on_message(self, message: dict[str, Any]) -> None:
        """A `lock_lost` or `canceled` event: stop that job if it runs here; or an order."""
        if text(message.get("channel", "")) == self.control_channel:
            self._on_order(message)
            return
        event = lock_event(message)
        if event is None:
            return
        jid, kind = event
        with self._lock:
            running = self._running_job(jid)
            if running is None:
                self._recent[jid] = (kind, time.monotonic())
                while len(self._recent) > RECENT:
                    self._recent.popitem(last=False)
                return
        if self._about_this_run(running, kind):
            self._lose(running, kind)

    def _on_order(self, message: dict[str, Any]) -> None:
        """An order from the admin (ignored when not well formed)."""
        order = decode(message.get("data")) if message.get("type") == "message" else None
        if order is None or self.control is None:
            return
        self.control.apply(order)

    def _about_this_run(self, running: RunningJob, event: str) -> bool:
        """Whether an event about a running job concerns its current lease (it does here:
        the serial worker runs a jid once at a time and never pops it again meanwhile)."""
        return True

    def _running_job(self, jid: str) -> RunningJob | None:
        """The running job of that jid, if it runs here (called under `_lock`)."""
        running = self.current
        return running if running is not None and running.job.jid == jid else None

    def _lose(self, running: RunningJob, reason: str) -> None:
        """Record that the running job is no longer ours and stop it."""
        if running.lost is None:
            running.lost = reason
        self._interrupt(running, LockLost)

    def _interrupt(self, running: RunningJob, exc_class: type[JobInterrupted]) -> None:
        """Send an interruption into the job (once; the fence watch may race this thread)."""
        with self._interrupting:
            if running.interrupted is not None:
                return
            running.interrupted = exc_class.reason
        # A pool's job is interrupted through its slot's own interrupter.
        (running.interrupter or self.interrupter).interrupt(exc_class)

    def _fenced(self, running: RunningJob, fence: Fence) -> None:
        """The job's lease ran out unrenewed (minus the margin): stop it; it is not ours."""
        with self._lock:
            if running.ended or running.lost is not None:
                return
            fence.fired = True
            unrenewed = fence.unrenewed_for()
            running.lost = f"fenced: its lease could not be renewed for {unrenewed:.1f}s"
        logger.warning(
            "qless worker %s: job %s fenced: its lease could not be renewed for %.1f s "
            "(the lock expires in %.1f s; margin %.1f s); it is stopped and will be neither "
            "completed nor failed by this worker: qless hands it out again once the lock "
            "expires", self.client.worker_name, fence.jid, unrenewed,
            fence.expires_at - time.monotonic(), fence.margin, extra=job_fields(running.job))
        self._interrupt(running, LeaseExpired)

    def _tick(self) -> None:
        """The running job's deadlines and renewal first, then parent liveness and the
        monitor's periodic calls."""
        self._tick_job()
        if self.parent_pid is not None and os.getppid() != self.parent_pid:
            self.stop.request("supervisor exited")
        if self.fetcher is not None:
            self.fetcher.lease_guard.poll()
        if self.presence is not None:
            self.presence.maybe_publish()
        if self.crons is not None:
            self.crons.maybe_run()

    def _tick_job(self) -> None:
        """Deadlines and heartbeats for the running job."""
        running = self.current
        if running is None or running.interrupted is not None or running.lost is not None:
            return
        if self.stop.requested and not self._announced:
            self._announced = True
            logger.info("qless worker %s: stopping (%s); waiting up to %ss for job %s",
                        self.client.worker_name, self.stop.reason, self.shutdown_timeout,
                        running.job.jid, extra=job_fields(running.job))
        now = time.monotonic()
        if running.deadline is not None and now >= running.deadline:
            # With a timer the job thread raises by itself; either way, stop renewing.
            if not self.interrupter.precise_time_limit:
                self._interrupt(running, TimeLimitExceeded)
            running.interrupted = running.interrupted or TimeLimitExceeded.reason
            return
        stop_at = self.stop.requested_at
        if stop_at is not None and now >= stop_at + self.shutdown_timeout:
            self._interrupt(running, ShutdownTimeout)
            return
        if now >= running.next_heartbeat:
            self._heartbeat(running)
        if (self.fetcher is not None and not running.held_released
                and now - running.started > HOLD_LIMIT):
            running.held_released = True
            self.fetcher.hand_back_held("held behind a long job")
        if self.waker is not None and not running.long and now - running.started > LONG_JOB:
            running.long = True
            self.waker.quiet()

    def _heartbeat(self, running: RunningJob) -> None:
        """Renew the lock; a refusal means the lock is lost."""
        running.next_heartbeat = time.monotonic() + running.interval
        if self.fetcher is not None:
            guard = self.fetcher.lease_guard
            guard.poll(force=True)
            if not guard.safe:
                # The renewal would take its expiry from the unsafe lease setting; the
                # lock keeps the expiry of its last good renewal instead (and the fence
                # stops the job before it runs out).
                return
        try:
            self._renew(running)
            self.heartbeats += 1
        except LockLostError as exc:
            if self.current is running:
                self._lose(running, f"heartbeat refused: {exc.message}")

    def _renew(self, running: RunningJob) -> None:
        """One heartbeat on the monitor's connection; accepted, the fence moves on.

        The new expiry counts from when the heartbeat was sent: Redis computed it from the
        `now` it carried (the reply is truncated to whole seconds, which only errs early).
        """
        job = running.job
        sent, sent_wall = time.monotonic(), self.client.now()
        expires = int(self.client.run(commands.heartbeat(job.jid, self.client.worker_name)))
        job.expires = expires
        if running.fence is not None:
            lease = self.fetcher.lease_guard.leases.get(job.queue_name) if self.fetcher else None
            running.fence.renewed(sent, expires - sent_wall, lease)
            self.fences.moved(running.fence.deadline)


def lock_event(message: dict[str, Any]) -> tuple[str, str] | None:
    """(jid, event) of a `lock_lost` or `canceled` message on the worker channel, else None."""
    if message.get("type") != "message":
        return None
    try:
        payload = json.loads(message["data"])
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("event") not in ("lock_lost", "canceled"):
        return None
    return str(payload.get("jid")), str(payload["event"])
