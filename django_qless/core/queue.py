"""A named qless queue: put, pop, peek, recur, counts, pause, per-queue settings."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import redis

from . import validation as check
from .exceptions import InvalidArgumentError, QueueFullError
from .records import QueueCounts, Stats, as_list

if TYPE_CHECKING:
    from .client import Client
    from .job import Job

JOB_STATES = ("running", "stalled", "scheduled", "depends", "recurring")


class Queue:
    """One queue, by name (queues exist implicitly once something is put into them)."""

    def __init__(self, client: Client, name: str) -> None:
        self.client = client
        self.name = check.queue_name(name)

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
        return self.put_args(
            "put",
            klass,
            self.client.encode(data),
            jid=check.new_jid(jid) if jid is not None else uuid.uuid4().hex,
            delay=delay,
            priority=priority,
            tags=tags,
            retries=retries,
            depends=depends,
        )

    def put_args(
        self,
        command: str,
        klass: str,
        encoded: str,
        *,
        jid: str,
        delay: float,
        priority: float | None,
        tags: list[str] | None,
        retries: int | None,
        depends: list[str] | None,
    ) -> str:
        """Shared body of `put` and `requeue`: validated, with options sent only when given."""
        args: list[Any] = [
            self.client.worker_name,
            self.name,
            check.jid(jid),
            check.label(klass, "klass"),
            encoded,
            check.number(delay, "delay", minimum=0),
        ]
        # Options left out keep the values of an existing job of the same jid.
        if priority is not None:
            args += ["priority", check.number(priority, "priority")]
        if tags is not None:
            args += ["tags", json.dumps(check.labels(tags, "tag"))]
        if retries is not None:
            args += ["retries", check.integer(retries, "retries", minimum=0)]
        if depends is not None:
            args += ["depends", json.dumps(check.jids(depends))]
        if command == "put":  # a new job; a requeue moves one that is already stored
            self.client.memory.check(sum(len(arg) for arg in args if isinstance(arg, str)))
        try:
            return str(self.client.call(command, *args))
        except redis.exceptions.OutOfMemoryError as exc:
            # Refused at the script's first write: nothing was written.
            raise QueueFullError(f"Redis refused the {command} (maxmemory): {exc}") from exc

    def pop(self, count: int = 1) -> list[Job]:
        """Lease up to `count` jobs (clamped to 1000) to this client's worker."""
        reply = self.client.call("pop", self.name, self.client.worker_name, check.count(count))
        return self.client.jobs_from_json(reply)

    def peek(self, count: int = 1) -> list[Job]:
        """The next `count` jobs a pop would return, without leasing them."""
        return self.client.jobs_from_json(self.client.call("peek", self.name, check.count(count)))

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
        args: list[Any] = [
            self.name,
            check.new_jid(jid) if jid is not None else uuid.uuid4().hex,
            check.label(klass, "klass"),
            self.client.encode(data),
            "interval",
            check.positive(interval, "interval"),
            check.number(offset, "offset", minimum=0),
        ]
        # The script defaults retries to 0; other qless clients send 5, like put's default.
        args += ["retries", check.integer(5 if retries is None else retries, "retries", minimum=0)]
        if priority is not None:
            args += ["priority", check.number(priority, "priority")]
        if tags is not None:
            args += ["tags", json.dumps(check.labels(tags, "tag"))]
        if backlog is not None:
            args += ["backlog", check.integer(backlog, "backlog", minimum=0)]
        return str(self.client.call("recur", *args))

    def length(self) -> int:
        """Running + waiting + scheduled jobs."""
        return int(self.client.call("length", self.name))

    def counts(self) -> QueueCounts:
        """Jobs in each state."""
        return QueueCounts.from_json(json.loads(self.client.call("queues", self.name)))

    def pause(self) -> None:
        """Stop handing out jobs (peek still works)."""
        self.client.call("pause", self.name)

    def unpause(self) -> None:
        """Resume handing out jobs."""
        self.client.call("unpause", self.name)

    @property
    def paused(self) -> bool:
        """Whether the queue is paused."""
        return self.counts().paused

    def jobs(self, state: str, offset: int = 0, count: int = 25) -> list[str]:
        """Jids in `state` (running, stalled, scheduled, depends, recurring), paginated."""
        if state not in JOB_STATES:
            raise InvalidArgumentError(f"state must be one of {JOB_STATES}, got {state!r}")
        reply = self.client.call(
            "jobs", state, self.name, check.offset(offset), check.count(count)
        )
        return [str(jid) for jid in as_list(reply)]

    def waiting(self, offset: int = 0, count: int = 25) -> list[str]:
        """Waiting jids in pop order, paginated (read straight from the work set)."""
        # The script has no paginated view of the work set (peek has no offset), and this
        # read-only ZREVRANGE has none of peek's side effects, so it is safe for listings.
        start = check.offset(offset)
        found = self.client.redis.zrevrange(
            f"ql:q:{self.name}-work", start, start + check.count(count) - 1
        )
        return [j.decode("utf-8") if isinstance(j, bytes) else str(j) for j in found]

    def stats(self, date: float | None = None) -> Stats:
        """Wait/run statistics for the day containing `date` (default: now)."""
        when = self.client.now() if date is None else check.number(date, "date", minimum=0)
        return Stats.from_json(json.loads(self.client.call("stats", self.name, when)))

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
        self.client.call("queue.forget", self.name)
