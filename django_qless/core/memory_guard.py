"""Refuse new jobs before Redis is full, so workers keep room to pop, complete and renew.

With `maxmemory-policy noeviction` a full Redis refuses every write that may grow memory,
and qless' pop, complete and heartbeat start with such a write: the queue would stop as a
whole. Refusing puts a little earlier (by default at 90% of `maxmemory`) keeps the last
tenth for the workers, which then drain the queue. `INFO memory` is read once a second
per client, or sooner once the puts since the last reading may have used a quarter of the
room that was left: close to the limit, before every put.
"""

from __future__ import annotations

import logging
import time

import redis

from .exceptions import QueueFullError

logger = logging.getLogger("django_qless")

#: Default share of `maxmemory` above which puts are refused.
DEFAULT_PUT_MEMORY_LIMIT = 0.9
#: Seconds between two readings of `INFO memory`, at most.
READ_EVERY = 1.0
#: What a job costs Redis besides its data and tags (job hash fields, history, set entries).
JOB_OVERHEAD = 1024
#: Memory is read again once the puts since the last reading may have used this share of
#: the room that was left, so even a fast producer stops close to the limit.
BUDGET_SHARE = 0.25
MIB = 1024 * 1024


class MemoryGuard:
    """Refuses puts while Redis' used memory is above `limit` x its `maxmemory`."""

    def __init__(self, connection: redis.Redis, limit: float | None) -> None:
        self.connection = connection
        self.limit = limit
        self._due = 0.0
        self._used = 0
        self._maxmemory = 0
        #: Bytes the puts since the last reading may have added, and how many may go unread.
        self._spent = 0
        self._budget = 0

    def check(self, size: int = 0) -> None:
        """Raise `QueueFullError` when Redis is above the limit; `size`: the job's bytes."""
        if self.limit is None:
            return
        now = time.monotonic()
        if now >= self._due or self._spent >= self._budget:
            self._read()
            if self.limit is None:
                return
            self._due = now + READ_EVERY
            self._spent = 0
            room = self.limit * self._maxmemory - self._used
            self._budget = int(room * BUDGET_SHARE) if self._maxmemory else 2**62
        self._spent += size + JOB_OVERHEAD
        if self._maxmemory and self._used >= self.limit * self._maxmemory:
            raise QueueFullError(
                f"Redis uses {self._used / MIB:.1f} MiB, more than {self.limit:.0%} of its "
                f"maxmemory ({self._maxmemory / MIB:.1f} MiB): new jobs are refused so that "
                "workers can still pop and complete; drain the queues, lower jobs-history or "
                "raise maxmemory"
            )

    def _read(self) -> None:
        """Refresh the figures; a Redis that refuses INFO turns the guard off."""
        try:
            info = self.connection.info("memory")
        except redis.ResponseError as exc:
            logger.warning("qless: cannot read INFO memory (%s); puts are not checked "
                           "against maxmemory", exc)
            self.limit = None
            return
        self._used = int(info.get("used_memory", 0))
        self._maxmemory = int(info.get("maxmemory", 0))
