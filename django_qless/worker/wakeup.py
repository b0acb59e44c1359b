"""Idle waiting: wake on a put to one of our queues, at the next due time, or after a poll.

While idle the worker listens on qless's log channel (`keys.LOG_CHANNEL`), where every
`put` (from any qless client) publishes `{jid, event: "put", queue}`; it wakes only for its
own queues. Delayed and recurring jobs publish nothing when they come due, so before
sleeping it asks when the first of them falls due (`Client.next_due`) and sets an alarm
for it. `poll_interval` bounds the sleep for everything else (jobs
released by a finished dependency, retries, unpaused queues).

While jobs keep coming the worker stops listening, so a busy worker does not parse every
event of the whole Redis database; it subscribes again before its last pop goes empty.

While listening the worker PINGs the connection every `PING_EVERY` seconds (see
`liveness`); a PING still unanswered at the next one ends the sleep (`lost`) and the
worker subscribes again on a new connection, and closes the idle connections of the
client's pool (they may be half-open as well). While it cannot subscribe, it polls
every `RELISTEN` seconds at most and tries again after each poll, so a put made once the
network heals is picked up within about `SUBSCRIBE_WAIT + RELISTEN` seconds (a subscription
sent into a half-open connection is given up after `SUBSCRIBE_WAIT`).

Threads: the worker's job thread listens, sleeps and closes; the monitor thread calls
`quiet()` when a job runs long. The pub/sub connection is guarded by `_lock`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis
import redis.client

from ..core import Client, keys
from .liveness import PingCheck

logger = logging.getLogger("django_qless.worker")

#: Longest uninterrupted block while sleeping, so a stop request is seen quickly.
SLICE = 0.25
#: Added to a due time so the pop happens just after the job becomes ready.
DUE_MARGIN = 0.002
#: Seconds between two PINGs on the event connection while the worker sleeps on it.
PING_EVERY = 2.0
#: Longest sleep while not subscribed: the worker pops, then tries to subscribe again.
RELISTEN = 1.0
#: Seconds a subscription may go unconfirmed before the connection counts as dead: as long
#: as a PING may go unanswered.
SUBSCRIBE_WAIT = PING_EVERY


class Waker:
    """Blocks the idle worker until there may be work."""

    def __init__(
        self,
        client: Client,
        queues: Sequence[str],
        poll_interval: float,
        should_stop: Callable[[], bool],
    ) -> None:
        self.client = client
        self.queues = frozenset(queues)
        self.poll_interval = poll_interval
        self.should_stop = should_stop
        self.listening = False
        self.wakeups: dict[str, int] = {"event": 0, "due": 0, "poll": 0, "lost": 0}
        self._pubsub: redis.client.PubSub | None = None
        # Guards the pub/sub connection: the monitor thread may call `quiet()`.
        self._lock = threading.Lock()
        self._popped_while_listening = 0
        self._ping = PingCheck(PING_EVERY)
        #: True from a failed subscription to the next one that works (one warning each).
        self._deaf = False

    def listen(self) -> bool:
        """Subscribe to the log channel unless already listening; True when it just subscribed."""
        if self.listening:
            return False
        with self._lock:
            try:
                self._subscribe()
            except redis.RedisError as exc:
                # Tried again after every poll: one warning until it works again.
                log = logger.debug if self._deaf else logger.warning
                log("qless worker: cannot listen for new jobs (%s); polling every %ss",
                    exc, RELISTEN)
                self._deaf = True
                self._drop()
                self._close_idle_connections()
                return False
            if self._deaf:
                logger.info("qless worker: listening for new jobs again")
                self._deaf = False
            self.listening = True
        self._popped_while_listening = 0
        return True

    def popped(self) -> None:
        """A job was popped: after two in a row the worker is busy, so stop listening."""
        if not self.listening:
            return
        self._popped_while_listening += 1
        if self._popped_while_listening >= 2:
            self.quiet()

    def quiet(self) -> None:
        """Stop listening until the next `listen()` (also called by the monitor thread when
        a job runs long, so events do not pile up in Redis for this connection meanwhile)."""
        with self._lock:
            if not self.listening:
                return
            self.listening = False
            try:
                if self._pubsub is not None:
                    self._pubsub.unsubscribe()  # type: ignore[no-untyped-call]
            except redis.RedisError:
                self._drop()

    def sleep(self, round_started: float) -> str:
        """Sleep until woken; returns why: `event`, `due`, `poll`, `lost` or `stop`."""
        timeout, reason = self._timeout(round_started)
        deadline = time.monotonic() + timeout
        while not self.should_stop():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.wakeups[reason] += 1
                return reason
            woke = self._wait_event(min(remaining, SLICE))
            if woke is not None:
                self.wakeups[woke] += 1
                return woke
        return "stop"

    def close(self) -> None:
        """Drop the subscription and its connection."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        """`close` with the lock held."""
        self.listening = False
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            try:
                pubsub.close()
            except redis.RedisError:
                pass

    def _close_idle_connections(self) -> None:
        """The network to Redis failed: the pool's idle connections may be half-open too (a
        write into one waits for the socket timeout, then fails), so close them; each
        connects again on its next use."""
        self.client.redis.connection_pool.disconnect(inuse_connections=False)

    def _timeout(self, round_started: float) -> tuple[float, str]:
        """How long to sleep, and what ends the sleep if no event comes first."""
        poll = self.poll_interval if self.listening else min(self.poll_interval, RELISTEN)
        try:
            due = self.client.next_due(self.queues)
        except redis.RedisError as exc:
            logger.warning("qless worker: cannot read due times (%s)", exc)
            return poll, "poll"
        # A due time at or before the last pop round should have been served by it; the
        # queue is paused or at its concurrency limit, so only an event or a poll helps.
        if due is None or due <= round_started:
            return poll, "poll"
        wait = max(due - self.client.now(), 0.0) + DUE_MARGIN
        return (wait, "due") if wait < poll else (poll, "poll")

    def _wait_event(self, timeout: float) -> str | None:
        """Read events for up to `timeout` seconds: `event` on one that means work for us,
        `lost` when the connection is gone, else None."""
        with self._lock:
            pubsub = self._pubsub if self.listening else None
            if pubsub is not None:
                try:
                    self._ping.check(pubsub)
                    message = pubsub.get_message(ignore_subscribe_messages=True, timeout=timeout)
                except redis.RedisError as exc:
                    logger.warning("qless worker: lost the event connection (%s); subscribing "
                                   "again", exc)
                    self._drop()
                    self._close_idle_connections()
                    return "lost"
        if pubsub is None:
            time.sleep(timeout)
            return None
        if message is None:
            return None
        if self._ping.answered(message):
            return None
        return "event" if self._relevant(message) else None

    def _relevant(self, message: dict[str, Any]) -> bool:
        """True for a put (or advance) into one of our queues, or a job handed back by timeout."""
        try:
            payload = json.loads(message["data"])
        except (TypeError, ValueError):
            return False
        if not isinstance(payload, dict):
            return False
        event = payload.get("event")
        if event == "put":
            return payload.get("queue") in self.queues
        if event == "advanced":
            return payload.get("to") in self.queues
        # `timeout` and lock expiry publish lock_lost without a queue; they are rare and the
        # job may be ours to take, so look.
        return event == "lock_lost"

    def _subscribe(self) -> None:
        """Subscribe to the log channel and read up to the confirmation (older events are
        stale)."""
        if self._pubsub is None:
            self._pubsub = self.client.redis.pubsub()  # type: ignore[no-untyped-call,unused-ignore]
        pubsub = self._pubsub
        self._ping.restart()
        pubsub.subscribe(keys.LOG_CHANNEL)
        deadline = time.monotonic() + SUBSCRIBE_WAIT
        while (left := deadline - time.monotonic()) > 0:
            message = pubsub.get_message(timeout=min(left, SLICE))
            if message is not None and message["type"] == "subscribe":
                return
        raise redis.TimeoutError(f"no confirmation for the {keys.LOG_CHANNEL} subscription")
