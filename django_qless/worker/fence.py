"""Fencing: a worker stops a job whose lease it could not renew before the lease runs out.

A worker cut off from Redis (a partition, replies lost or late) cannot renew its lock;
once the lock expires qless hands the job to another worker after the grace period, and
without a fence both would run it. So each running job has a `Fence`: the time its lock
expires in Redis, minus a safety margin (`margin_for`). Each renewal moves it on. The
expiry is measured from when the renewing request was *sent*: Redis computes it from
the `now` the request carries, so a reply that comes back late says nothing of the
time already spent. The pop counts as the first renewal (its job carries its expiry).

`FenceWatch` is one thread that calls a fence's `on_due` when its deadline passes. It
never talks to Redis, so a renewal hanging on a dead connection cannot delay it. It is
woken only when a deadline comes before the one it sleeps to: a job that starts (or is
renewed) with a later deadline waits for that wake, so short jobs cost it nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from .log_fields import jid_fields

logger = logging.getLogger("django_qless.worker")

#: The safety margin (seconds) is the larger of these: the job is stopped this long
#: before its lock expires, so the interruption (or the child's SIGKILL) lands while
#: the lock is still ours, even on a loaded machine. Another worker can take the job
#: no sooner than the expiry plus qless's `grace-period`, so the margin and the grace
#: period both stand between the stop and a second run.
MARGIN_MIN = 0.5
MARGIN_SHARE = 0.1
#: ...but never more than this share of the lease: under a lease of a second or two,
#: one late renewal (of the three per lease) must not fence the job.
MARGIN_MAX_SHARE = 0.25


#: How far past a truncated reply the lease may be and still agree with it (the `now`
#: the renewal carried was read a moment after `sent`).
AGREE = 0.05


def margin_for(lease: float) -> float:
    """The safety margin of a lease of `lease` seconds: max(0.5 s, 10% of the lease),
    at most a quarter of the lease (3 s: 0.5 s; 60 s: 6 s; 1 s: 0.25 s)."""
    return min(max(MARGIN_MIN, lease * MARGIN_SHARE), lease * MARGIN_MAX_SHARE)


class Fence:
    """When one running job must be stopped unless its lease is renewed first.

    `expires_in` is how long the lock had left, by the client's clock, when the request
    that set it (the pop) was sent; `lease` the lease it was given (for the margin).
    """

    def __init__(self, jid: str, lease: float, expires_in: float,
                 sent: float | None = None) -> None:
        self.jid = jid
        self.lease = lease
        #: When the last renewal that Redis accepted was sent (monotonic).
        self.renewed_at = time.monotonic() if sent is None else sent
        #: When the lock expires in Redis, on this process' monotonic clock.
        self.expires_at = self.renewed_at + expires_in
        #: Set once the fence fired: the job is no longer this worker's.
        self.fired = False

    @property
    def margin(self) -> float:
        """Seconds before the expiry at which the job is stopped."""
        return margin_for(self.lease)

    @property
    def deadline(self) -> float:
        """When the job is stopped unless renewed (monotonic)."""
        return self.expires_at - self.margin

    def renewed(self, sent: float, replied_in: float, lease: float | None = None) -> None:
        """A renewal sent at `sent` (monotonic) was accepted.

        `replied_in` is the expiry it replied minus the `now` it carried. qless truncates
        that reply to whole seconds, so it is up to a second short: when `lease` (the
        queue's lease, read just before) agrees with it, the lock expires `lease` seconds
        after `sent`; otherwise (the lease changed meanwhile) the reply is taken as it is.
        """
        expires_in = replied_in
        if lease is not None and replied_in - AGREE <= lease < replied_in + 1:
            expires_in = lease
        self.renewed_at = sent
        self.expires_at = sent + expires_in
        self.lease = max(self.lease, expires_in)

    def due(self, now: float | None = None) -> bool:
        """True once the deadline has passed."""
        return (time.monotonic() if now is None else now) >= self.deadline

    def unrenewed_for(self, now: float | None = None) -> float:
        """Seconds since the last accepted renewal (or the pop) was sent."""
        return (time.monotonic() if now is None else now) - self.renewed_at


class FenceWatch(threading.Thread):
    """Calls each watched fence's `on_due` once its deadline passes (from this thread)."""

    def __init__(self, name: str) -> None:
        super().__init__(name=f"qless-fence-{name}", daemon=True)
        self._watched: dict[int, tuple[Fence, Callable[[Fence], None]]] = {}
        self._changed = threading.Condition()
        self._halted = False
        #: The deadline the thread sleeps until (None: until it is told of one).
        self._wakes_at: float | None = None

    def watch(self, fence: Fence, on_due: Callable[[Fence], None]) -> None:
        """Start watching a fence (of a job that just started)."""
        with self._changed:
            self._watched[id(fence)] = (fence, on_due)
            self._wake_for(fence.deadline)

    def moved(self, deadline: float) -> None:
        """A watched fence's deadline is now `deadline` (a renewal, perhaps to a shorter
        lease): wake the thread if it sleeps past it."""
        with self._changed:
            self._wake_for(deadline)

    def _wake_for(self, deadline: float) -> None:
        """Wake the thread if it would sleep past `deadline` (the lock is held)."""
        # Waking it costs the job threads the GIL: only when it would be late otherwise.
        if self._wakes_at is None or deadline < self._wakes_at:
            self._wakes_at = deadline
            self._changed.notify()

    def forget(self, fence: Fence) -> None:
        """Stop watching a fence (its job ended)."""
        with self._changed:
            self._watched.pop(id(fence), None)

    def halt(self) -> None:
        """Stop the thread."""
        with self._changed:
            self._halted = True
            self._changed.notify()

    def run(self) -> None:
        """Sleep until the earliest deadline (or a change), fire what is due."""
        while True:
            with self._changed:
                if self._halted:
                    return
                now = time.monotonic()
                due = [entry for entry in self._watched.values() if entry[0].due(now)]
                for fence, _ in due:
                    del self._watched[id(fence)]
                if not due:
                    deadlines = [fence.deadline for fence, _ in self._watched.values()]
                    self._wakes_at = min(deadlines) if deadlines else None
                    self._changed.wait(None if self._wakes_at is None
                                       else self._wakes_at - now)
                    continue
            for fence, on_due in due:
                try:
                    on_due(fence)
                except Exception:
                    logger.exception("qless worker: could not fence job %s", fence.jid,
                                     extra=jid_fields(fence.jid))
