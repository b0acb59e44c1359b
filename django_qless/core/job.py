"""A qless job as read from Redis, with the commands that act on it."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import commands
from . import validation as check
from .records import Failure, HistoryEntry, as_list, as_number

if TYPE_CHECKING:
    from .client import Client
    from .queue import Queue


class Job:
    """A job: fields from the script's job object, bound to the client that read it."""

    def __init__(self, client: Client, obj: Mapping[str, Any]) -> None:
        self.client = client
        self.jid: str = str(obj["jid"])
        self.klass: str = str(obj.get("klass", ""))
        self.state: str = str(obj.get("state", ""))
        self.queue_name: str = str(obj.get("queue") or "")
        self.worker: str = str(obj.get("worker") or "")
        self.tracked: bool = bool(obj.get("tracked", False))
        self.priority: int | float = as_number(obj.get("priority", 0))
        self.expires: int | float = as_number(obj.get("expires") or 0)
        self.retries: int = int(as_number(obj.get("retries", 0)))
        self.remaining: int = int(as_number(obj.get("remaining", 0)))
        #: Which attempt at the job this is, from 1 (each retry or lost lease spends one);
        #: kept as read, while `remaining` follows a retry sent from here.
        self.attempt: int = max(self.retries - self.remaining + 1, 1)
        raw = obj.get("data")
        # qless stores data as a JSON string; keep it verbatim so nothing is lost in transit.
        self.raw_data: str = raw if isinstance(raw, str) else json.dumps(raw)
        self.tags: tuple[str, ...] = tuple(map(str, as_list(obj.get("tags"))))
        # Parsed on first read: the worker pops jobs by the thousand and never reads it.
        # None when the reply left it out (the worker's lean pops): read from Redis then.
        self._history: Any = obj.get("history")
        # Seconds waited before this pop, in a lean pop's reply (see `waited`).
        self._waited: Any = obj.get("waited")
        self.failure: Failure | None = Failure.from_json(obj.get("failure"))
        spawned = obj.get("spawned_from_jid")
        self.spawned_from_jid: str | None = str(spawned) if spawned else None
        dependents = obj.get("dependents")
        if dependents is not None:
            self.dependents = tuple(as_list(dependents))
        self.dependencies: tuple[str, ...] = tuple(as_list(obj.get("dependencies")))

    def __repr__(self) -> str:
        return f"<Job {self.jid} {self.klass} {self.state} in {self.queue_name or '-'}>"

    @functools.cached_property
    def data(self) -> dict[str, Any]:
        """The job data as a dict; raises `JobDataError` if what is stored is not a JSON object."""
        return check.decode_object(self.raw_data)

    @functools.cached_property
    def history(self) -> tuple[HistoryEntry, ...]:
        """The job's events, oldest first (read from Redis when the reply had none)."""
        if self._history is None:
            stored = self._stored
            self._history = stored._history if stored is not None else []
        return tuple(HistoryEntry.from_json(entry) for entry in as_list(self._history))

    @property
    def waited(self) -> float | None:
        """Seconds the job waited for this pop (since its put, last move or pop), or None.

        A lean pop says it exactly; a full one tells it, to the second, by its history's
        last two entries when they are its `put` and this `popped`. Never read from Redis.
        """
        if isinstance(self._waited, int | float):
            return max(float(self._waited), 0.0)
        entries = self._history
        if not isinstance(entries, list) or len(entries) < 2:
            return None
        put, popped = entries[-2], entries[-1]
        if not (isinstance(put, dict) and isinstance(popped, dict)
                and put.get("what") == "put" and popped.get("what") == "popped"):
            return None
        try:
            return max(float(popped["when"]) - float(put["when"]), 0.0)
        except (KeyError, TypeError, ValueError):
            return None

    @functools.cached_property
    def dependents(self) -> tuple[str, ...]:
        """The jids of the jobs waiting for this one (read from Redis when the reply had none)."""
        stored = self._stored
        return stored.dependents if stored is not None else ()

    @functools.cached_property
    def _stored(self) -> Job | None:
        """The whole job as Redis has it, read once for what a lean reply left out."""
        return self.client.get_job(self.jid)

    @property
    def queue(self) -> Queue:
        """The job's queue (raises `InvalidArgumentError` for a completed job, which has none)."""
        return self.client.existing_queue(self.queue_name)

    @property
    def ttl(self) -> float:
        """Seconds left on this job's lock by the client's clock (negative once expired)."""
        return float(self.expires) - self.client.now()

    def refresh(self) -> Job | None:
        """Read the job again; None if it no longer exists."""
        return self.client.get_job(self.jid)

    # Lock holder commands: the client's worker name must own the job.

    def complete(
        self,
        data: Mapping[str, Any] | None = None,
        *,
        next_queue: str | None = None,
        delay: float = 0,
        depends: list[str] | None = None,
    ) -> str:
        """Complete the job, or advance it to `next_queue`; returns the new state."""
        command = commands.complete(
            self.jid, self.client.worker_name, self.queue_name, self._data(data),
            next_queue=next_queue, delay=delay, depends=depends,
        )
        self.state = str(self.client.run(command))
        return self.state

    def fail(self, group: str, message: str, data: Mapping[str, Any] | None = None) -> str:
        """Fail the job into failure `group`; returns the jid."""
        encoded = None if data is None else self._data(data)
        command = commands.fail(self.jid, self.client.worker_name, group, message, encoded)
        reply = str(self.client.run(command))
        self.state = "failed"
        return reply

    def retry(self, delay: float = 0, group: str | None = None, message: str | None = None) -> int:
        """Give the job back for another try; returns retries left (negative: it failed)."""
        command = commands.retry(
            self.jid, self.queue_name, self.client.worker_name, delay, group, message
        )
        self.remaining = int(self.client.run(command))
        return self.remaining

    def heartbeat(self, data: Mapping[str, Any] | None = None) -> int:
        """Renew the lock (optionally replacing data); returns the new expiry (whole seconds)."""
        encoded = None if data is None else self._data(data)
        expires = int(self.client.run(commands.heartbeat(self.jid, self.client.worker_name,
                                                         encoded)))
        self.expires = expires
        return expires

    # Commands anyone may send.

    def cancel(self) -> list[str]:
        """Delete the job (refused while another job depends on it)."""
        return self.client.cancel(self.jid)

    def timeout(self) -> None:
        """Expire the running job's lock now, handing it to the next worker."""
        self.client.timeout(self.jid)

    def set_priority(self, priority: float) -> None:
        """Change the priority (higher pops first)."""
        command = commands.priority(self.jid, priority)
        self.client.run(command)
        self.priority = command.args[1]

    def tag(self, *tags: str) -> tuple[str, ...]:
        """Add tags; returns the job's tags."""
        reply = self.client.run(commands.tag(self.jid, tags))
        self.tags = tuple(as_list(json.loads(reply)))
        return self.tags

    def untag(self, *tags: str) -> tuple[str, ...]:
        """Remove tags; returns the job's tags."""
        reply = self.client.run(commands.untag(self.jid, tags))
        self.tags = tuple(as_list(json.loads(reply)))
        return self.tags

    def track(self) -> bool:
        """Track the job (its events go to the per-event channels)."""
        self.tracked = self.client.track(self.jid)
        return self.tracked

    def untrack(self) -> bool:
        """Stop tracking the job."""
        self.tracked = not self.client.untrack(self.jid)
        return not self.tracked

    def depend(self, *jids: str) -> None:
        """Make this job (state `depends`) wait for more jobs."""
        self.client.run(commands.depend(self.jid, jids))

    def undepend(self, *jids: str) -> None:
        """Stop waiting for some jobs."""
        self.client.run(commands.undepend(self.jid, jids))

    def undepend_all(self) -> None:
        """Stop waiting for every job; the job becomes waiting."""
        self.client.run(commands.undepend(self.jid))

    def log(self, message: str, data: Mapping[str, Any] | None = None) -> None:
        """Append an entry to the job's history."""
        encoded = None if data is None else self._data(data)
        self.client.run(commands.log(self.jid, message, encoded))

    def requeue(
        self,
        queue: str | None = None,
        *,
        data: Mapping[str, Any] | None = None,
        delay: float = 0,
        priority: float | None = None,
        tags: list[str] | None = None,
        retries: int | None = None,
        depends: list[str] | None = None,
    ) -> str:
        """Put the existing job back into `queue` (default: its own); fails if it is gone."""
        return self.client.put(commands.put(
            self.client.worker_name, queue or self.queue_name, self.jid, self.klass,
            self._data(data), delay, priority=priority, tags=tags, retries=retries,
            depends=depends, requeue=True,
        ))

    def move(self, queue: str) -> str:
        """Requeue the job into another queue, keeping its data and options."""
        return self.requeue(queue)

    def _data(self, data: Mapping[str, Any] | None) -> str:
        """Encode replacement data, or resend the stored data verbatim."""
        return self.raw_data if data is None else self.client.encode(data)
