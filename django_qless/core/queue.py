"""A named qless queue: put, pop, peek, recur, counts, pause, per-queue settings."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import commands, keys
from . import validation as check
from .exceptions import InvalidArgumentError
from .records import QueueCounts, Stats, as_list

if TYPE_CHECKING:
    from .client import Client
    from .job import Job

JOB_STATES = ("running", "stalled", "scheduled", "depends", "recurring")


class Queue:
    """One queue, by name (queues exist implicitly once something is put into them)."""

    def __init__(self, client: Client, name: str, *, existing: bool = False) -> None:
        self.client = client
        # `existing`: a name read back from Redis, which another client may have chosen; it
        # can be read, while writes that name a queue (put, recur) still check it strictly.
        self.name = check.existing_queue_name(name) if existing else check.queue_name(name)

    def __repr__(self) -> str:
        return f"<Queue {self.name}>"

    def put(
        self,
        klass: str,
        data: Mapping[str, Any],
        *,
        jid: str | None = None,
        delay: float = 0,
        priority: float | None = None,
        tags: list[str] | None = None,
        retries: int | None = None,
        depends: list[str] | None = None,
    ) -> str:
        """Enqueue a job (or re-put an existing jid); returns the jid (default: uuid4 hex).

        Refused with `QueueFullError` (nothing written) when Redis is near or at maxmemory.
        """
        return self.client.put(commands.put(
            self.client.worker_name, self.name,
            check.new_jid(jid) if jid is not None else uuid.uuid4().hex,
            klass, self.client.encode(data), delay,
            priority=priority, tags=tags, retries=retries, depends=depends,
        ))

    def pop(self, count: int = 1) -> list[Job]:
        """Lease up to `count` jobs (clamped to 1000) to this client's worker."""
        command = commands.pop(self.name, self.client.worker_name, check.count(count))
        return self.client.jobs_from_json(self.client.run(command))

    def peek(self, count: int = 1) -> list[Job]:
        """The next `count` jobs a pop would return, without leasing them."""
        return self.client.jobs_from_json(self.client.run(commands.peek(self.name, count)))

    def recur(
        self,
        klass: str,
        data: Mapping[str, Any],
        interval: float,
        *,
        offset: float = 0,
        jid: str | None = None,
        priority: float | None = None,
        tags: list[str] | None = None,
        retries: int | None = None,
        backlog: int | None = None,
    ) -> str:
        """Create or replace a recurring job spawning every `interval` seconds; returns its jid."""
        return str(self.client.run(commands.recur(
            self.name, check.new_jid(jid) if jid is not None else uuid.uuid4().hex, klass,
            self.client.encode(data), interval, offset,
            priority=priority, tags=tags, retries=retries, backlog=backlog,
        )))

    def length(self) -> int:
        """Running + waiting + scheduled jobs."""
        return int(self.client.run(commands.length(self.name)))

    def counts(self) -> QueueCounts:
        """Jobs in each state."""
        return QueueCounts.from_json(json.loads(self.client.run(commands.queues(self.name))))

    def pause(self) -> None:
        """Stop handing out jobs (peek still works)."""
        self.client.run(commands.pause(self.name))

    def unpause(self) -> None:
        """Resume handing out jobs."""
        self.client.run(commands.unpause(self.name))

    @property
    def paused(self) -> bool:
        """Whether the queue is paused."""
        return self.counts().paused

    def jobs(self, state: str, offset: int = 0, count: int = 25) -> list[str]:
        """Jids in `state` (running, stalled, scheduled, depends, recurring), paginated."""
        if state not in JOB_STATES:
            raise InvalidArgumentError(f"state must be one of {JOB_STATES}, got {state!r}")
        reply = self.client.run(commands.jobs(state, self.name, offset, count))
        return [str(jid) for jid in as_list(reply)]

    def waiting(self, offset: int = 0, count: int = 25) -> list[str]:
        """Waiting jids in pop order, paginated (read straight from the work set)."""
        # The script has no paginated view of the work set (peek has no offset), and this
        # read-only ZREVRANGE has none of peek's side effects, so it is safe for listings.
        start = check.offset(offset)
        found = self.client.redis.zrevrange(
            keys.queue_set(self.name, "work"), start, start + check.count(count) - 1
        )
        return [j.decode("utf-8") if isinstance(j, bytes) else str(j) for j in found]

    def stats(self, date: float | None = None) -> Stats:
        """Wait/run statistics for the day containing `date` (default: now)."""
        when = self.client.now() if date is None else date
        return Stats.from_json(json.loads(self.client.run(commands.stats(self.name, when))))

    @property
    def heartbeat(self) -> int | float:
        """Lock duration for this queue: `<queue>-heartbeat`, else the global `heartbeat`."""
        value = self.client.config.get(f"{self.name}-heartbeat")
        if value is None:
            value = self.client.config.get("heartbeat")
        return check.number(value, "heartbeat")

    @heartbeat.setter
    def heartbeat(self, seconds: float | None) -> None:
        self.client.config.put(f"{self.name}-heartbeat", seconds)

    @property
    def max_concurrency(self) -> int | None:
        """How many jobs may run at once (None: unlimited)."""
        value = self.client.config.get(f"{self.name}-max-concurrency")
        return int(value) if value else None

    @max_concurrency.setter
    def max_concurrency(self, limit: int | None) -> None:
        self.client.config.put(f"{self.name}-max-concurrency", limit)

    def forget(self) -> None:
        """Drop the queue's name from the list of known queues (jobs are untouched)."""
        self.client.run(commands.forget_queue(self.name))
