"""The qless client: one Redis connection, one clock, one worker identity."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import redis

from . import validation as check
from .config import Config
from .events import EventListener
from .exceptions import DependencyError, InvalidArgumentError
from .job import Job
from .memory import DEFAULT_PUT_MEMORY_LIMIT, MemoryGuard
from .queue import Queue
from .records import Page, QueueCounts, Tracked, as_list
from .recurring import RecurringJob
from .script import QlessScript
from .workers import Workers

#: Largest number of jids sent in one script call by the bulk helpers.
CHUNK = 500
DEFAULT_MAX_PAYLOAD = 1_048_576


def default_worker_name() -> str:
    """`host-pid-<random hex>`: unique per client, so two clients never share locks."""
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname())[:200] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(4)}"


class Client:
    """Entry point: queues, jobs and the cross-queue queries of one qless database."""

    def __init__(
        self,
        redis: redis.Redis,
        *,
        clock: Callable[[], float] = time.time,
        worker_name: str | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD,
        put_memory_limit: float | None = DEFAULT_PUT_MEMORY_LIMIT,
    ) -> None:
        self.redis = redis
        self.clock = clock
        self.worker_name = check.worker_name(
            default_worker_name() if worker_name is None else worker_name
        )
        self.max_payload_bytes = check.integer(max_payload_bytes, "max_payload_bytes", minimum=1)
        if put_memory_limit is not None:
            check.number(put_memory_limit, "put_memory_limit", minimum=0)
            if not 0 < put_memory_limit <= 1:
                raise InvalidArgumentError(
                    f"put_memory_limit must be above 0 and at most 1, got {put_memory_limit!r}"
                )
        self.memory = MemoryGuard(redis, put_memory_limit)
        self.script = QlessScript(redis)
        self.config = Config(self)
        self.workers = Workers(self)

    def __repr__(self) -> str:
        return f"<Client worker={self.worker_name}>"

    def now(self) -> float:
        """The client's clock (seconds since the epoch), checked to be finite."""
        return float(check.number(self.clock(), "clock()"))

    def call(self, command: str, *args: Any) -> Any:
        """Run a script command with `now` from the clock; returns the decoded reply."""
        return self.script(command, self.now(), *args)

    def encode(self, data: Mapping[str, Any]) -> str:
        """Encode job data, enforcing JSON and the payload limit."""
        return check.encode_data(data, self.max_payload_bytes)

    def queue(self, name: str) -> Queue:
        """A queue by name."""
        return Queue(self, name)

    def queues(self) -> list[QueueCounts]:
        """Counts of every known queue, in the order they were first seen."""
        return [QueueCounts.from_json(obj) for obj in as_list(json.loads(self.call("queues")))]

    # Jobs

    def get_job(self, jid: str) -> Job | None:
        """A job by jid, or None."""
        reply = self.call("get", check.jid(jid))
        return None if reply is None else Job(self, json.loads(reply))

    def get_jobs(self, jids: Iterable[str]) -> list[Job]:
        """Several jobs (unknown jids are skipped), in batches of `CHUNK`."""
        wanted = check.jids(jids)
        jobs: list[Job] = []
        for start in range(0, len(wanted), CHUNK):
            jobs += self.jobs_from_json(self.call("multiget", *wanted[start : start + CHUNK]))
        return jobs

    def jobs_from_json(self, reply: str | None) -> list[Job]:
        """Jobs from a JSON array reply (`{}` or nil means none)."""
        return [] if reply is None else [Job(self, obj) for obj in as_list(json.loads(reply))]

    def recurring(self, jid: str) -> RecurringJob | None:
        """A recurring job template by jid, or None."""
        reply = self.call("recur.get", check.jid(jid))
        return None if reply is None else RecurringJob(self, json.loads(reply))

    def cancel(self, *jids: str) -> list[str]:
        """Delete jobs. Refused if a job has a dependent not cancelled in the same call."""
        pending = _chunks(check.jids(jids))
        done: list[str] = []
        while pending:
            refused = []
            for chunk in pending:
                try:
                    done += [str(j) for j in as_list(self.call("cancel", *chunk))]
                except DependencyError:
                    refused.append(chunk)
            if len(refused) == len(pending):
                # No batch could go alone: a parent and its dependents span batches, so
                # send them together (the script refuses again only if a dependent is left out).
                done += [str(j) for j in as_list(self.call("cancel", *sum(refused, [])))]
                break
            pending = refused
        return done

    def timeout(self, *jids: str) -> None:
        """Expire running jobs' locks now."""
        for chunk in _chunks(check.jids(jids)):
            self.call("timeout", *chunk)

    def track(self, jid: str) -> bool:
        """Track a job (raises `JobNotFoundError` if it does not exist)."""
        return _flag(self.call("track", "track", check.jid(jid)))

    def untrack(self, jid: str) -> bool:
        """Stop tracking a job; False if it was not tracked."""
        return _flag(self.call("track", "untrack", check.jid(jid)))

    def tracked(self) -> Tracked:
        """Tracked jobs, and tracked jids whose job is gone."""
        reply = json.loads(self.call("track"))
        return Tracked(
            jobs=tuple(Job(self, obj) for obj in as_list(reply.get("jobs"))),
            expired=tuple(str(j) for j in as_list(reply.get("expired"))),
        )

    # Queries

    def jobs(
        self, state: str, queue: str | None = None, offset: int = 0, count: int = 25
    ) -> list[str]:
        """Jids by state: `complete` (no queue) or running/stalled/scheduled/depends/recurring."""
        if state == "complete":
            return self.completed(offset, count)
        if queue is None:
            raise InvalidArgumentError(f"jobs in state {state!r} need a queue")
        return self.queue(queue).jobs(state, offset, count)

    def completed(self, offset: int = 0, count: int = 25) -> list[str]:
        """Jids of completed jobs, most recent first."""
        reply = self.call("jobs", "complete", check.offset(offset), check.count(count))
        return [str(j) for j in as_list(reply)]

    def failed(self) -> dict[str, int]:
        """Failure groups and how many jobs each holds."""
        reply = json.loads(self.call("failed"))
        return {str(group): int(n) for group, n in (reply or {}).items()}

    def failed_jobs(self, group: str, start: int = 0, limit: int = 25) -> Page:
        """One page of a failure group, newest first."""
        reply = json.loads(
            self.call(
                "failed", check.label(group, "failure group"), check.offset(start, "start"),
                check.count(limit, "limit"),
            )
        )
        return self._page(reply)

    def unfail(self, queue: str, group: str, count: int = 25) -> int:
        """Put the `count` oldest jobs of a failure group back into `queue`; returns how many."""
        reply = self.call(
            "unfail", check.queue_name(queue), check.label(group, "failure group"),
            check.count(count),
        )
        return int(reply)

    def tagged(self, tag: str, offset: int = 0, count: int = 25) -> Page:
        """One page of the jobs carrying `tag`."""
        reply = self.call(
            "tag", "get", check.label(tag, "tag"), check.offset(offset), check.count(count)
        )
        return self._page(json.loads(reply))

    def top_tags(self, offset: int = 0, count: int = 25) -> list[str]:
        """Tags carried by at least two jobs, most used first."""
        reply = self.call("tag", "top", check.offset(offset), check.count(count))
        return [str(t) for t in as_list(json.loads(reply))]

    def events(self, *, worker: str | None = None) -> EventListener:
        """A listener on the plain channels, plus `ql:w:<worker>` when a worker is given."""
        return EventListener(self, worker=worker)

    def _page(self, reply: Mapping[str, Any]) -> Page:
        """A Page from a `{total, jobs: [jid...]}` reply, with the jobs fetched."""
        jids = tuple(str(j) for j in as_list(reply.get("jobs")))
        return Page(total=int(reply.get("total", 0)), jids=jids, jobs=tuple(self.get_jobs(jids)))


def _chunks(items: list[str]) -> list[list[str]]:
    """Split a list into batches of at most `CHUNK`."""
    return [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]


def _flag(reply: str) -> bool:
    """Decode the JSON text "1"/"0" that track and untrack reply with."""
    # A non-empty string is always truthy: the reply must be decoded, not tested.
    return bool(json.loads(reply))
