"""The qless client: one Redis connection, one clock, one worker identity."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import redis

from . import commands, exchange, keys, put_many
from . import validation as check
from .commands import Command
from .config import Config
from .events import EventListener
from .exceptions import DependencyError, InvalidArgumentError
from .job import Job
from .memory_guard import DEFAULT_PUT_MEMORY_LIMIT, MemoryGuard
from .queue import Queue
from .records import Page, PutOutcome, QueueCounts, Tracked, as_list
from .recurring import RecurringJob
from .replication import ACKNOWLEDGED, ReplicaAck
from .replication import call as call_acknowledged
from .script import QlessScript
from .workers import Workers

#: Largest number of jids sent in one script call by the bulk helpers.
CHUNK = 500
DEFAULT_MAX_PAYLOAD = 1_048_576
#: Tracked jobs whose state `tracked_states` reads, by default.
TRACKED_STATE_LIMIT = 10_000


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
        replica_ack: ReplicaAck | None = None,
    ) -> None:
        self.redis = redis
        #: When set, puts and completions are followed by WAIT (`core/replication.py`).
        self.replica_ack = replica_ack
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
        #: The connection puts keep between calls (`exchange`).
        self.slot = exchange.Slot()
        self.config = Config(self)
        self.workers = Workers(self)

    def __repr__(self) -> str:
        return f"<Client worker={self.worker_name}>"

    def now(self) -> float:
        """The client's clock (seconds since the epoch), checked to be finite."""
        return float(check.number(self.clock(), "clock()"))

    def call(self, command: str, *args: Any) -> Any:
        """Run a script command by name with `now` from the clock; returns the decoded reply."""
        if self.replica_ack is not None and command in ACKNOWLEDGED:
            return call_acknowledged(self, self.replica_ack, Command(command, args))
        return self.script(command, self.now(), *args)

    def run(self, command: Command) -> Any:
        """Run one built `Command`; returns the decoded reply."""
        return self.call(command.name, *command.args)

    def put(self, command: Command) -> str:
        """Run a built `put` or `requeue`; returns the jid.

        A new job is first checked against Redis' memory (`QueueFullError`, nothing written).
        """
        if command.name == "put":  # a requeue moves a job that is already stored
            self.memory.check(sum([len(arg) for arg in command.args if type(arg) is str]))
        return str(self.write(command))

    def put_if_absent(self, command: Command) -> PutOutcome:
        """Run a built `put_if_absent`; an existing job of that jid is left as it is.

        Checked against Redis' memory first, as a new job is (`QueueFullError`).
        """
        self.memory.check(sum([len(arg) for arg in command.args if type(arg) is str]))
        return PutOutcome.from_reply(self.write(command))

    def put_many(self, commands: Sequence[Command]) -> list[Any]:
        """Run built `put`, `put_if_absent` and `track` commands in order, in few round
        trips (`core.put_many`); their replies. `PartialPutError` if the script refused one.
        """
        return put_many.run(self, commands)

    def write(self, command: Command) -> Any:
        """`run` for the enqueue path: the lean round trip (`exchange`), unless puts are
        followed by WAIT (`replica_ack`)."""
        if self.replica_ack is not None:
            return self.run(command)
        return exchange.run(self, command)

    def encode(self, data: Mapping[str, Any]) -> str:
        """Encode job data, enforcing JSON and the payload limit."""
        return check.encode_data(data, self.max_payload_bytes)

    def queue(self, name: str) -> Queue:
        """A queue by name (refused unless it is a valid queue name)."""
        return Queue(self, name)

    def existing_queue(self, name: str) -> Queue:
        """A queue by a name found in Redis, valid or not (any qless client may have chosen it)."""
        return Queue(self, name, existing=True)

    def queues(self) -> list[QueueCounts]:
        """Counts of every known queue, in the order they were first seen."""
        reply = json.loads(self.run(commands.queues()))
        return [QueueCounts.from_json(obj) for obj in as_list(reply)]

    # Jobs

    def get_job(self, jid: str) -> Job | None:
        """A job by jid, or None."""
        reply = self.run(commands.get(jid))
        return None if reply is None else Job(self, json.loads(reply))

    def get_jobs(self, jids: Iterable[str]) -> list[Job]:
        """Several jobs (unknown jids are skipped), in batches of `CHUNK`."""
        wanted = list(jids)
        jobs: list[Job] = []
        for start in range(0, len(wanted), CHUNK):
            jobs += self.jobs_from_json(self.run(commands.multiget(wanted[start : start + CHUNK])))
        return jobs

    def jobs_from_json(self, reply: str | None) -> list[Job]:
        """Jobs from a JSON array reply (`{}` or nil means none)."""
        return [] if reply is None else [Job(self, obj) for obj in as_list(json.loads(reply))]

    def due_times(self, kind: str, members: Iterable[tuple[str, str]]) -> dict[str, float]:
        """When each `(queue, jid)` is due, in one round trip: a scheduled job's run time
        (`kind` "scheduled") or a recurring template's next spawn ("recur")."""
        pairs = list(members)
        if not pairs:
            return {}
        with self.redis.pipeline(transaction=False) as pipe:
            for queue, jid in pairs:
                pipe.zscore(keys.queue_set(queue, kind), jid)
            scores = pipe.execute()
        return {jid: float(score) for (_, jid), score in zip(pairs, scores, strict=True)
                if score is not None}

    def recurring(self, jid: str) -> RecurringJob | None:
        """A recurring job template by jid, or None."""
        reply = self.run(commands.recur_get(jid))
        return None if reply is None else RecurringJob(self, json.loads(reply))

    def cancel(self, *jids: str) -> list[str]:
        """Delete jobs. Refused if a job has a dependent not cancelled in the same call."""
        pending = _chunks(check.jids(jids))
        done: list[str] = []
        while pending:
            refused = []
            for chunk in pending:
                try:
                    done += [str(j) for j in as_list(self.run(commands.cancel(chunk)))]
                except DependencyError:
                    refused.append(chunk)
            if len(refused) == len(pending):
                # No batch could go alone: a parent and its dependents span batches, so
                # send them together (the script refuses again only if a dependent is left out).
                done += [str(j) for j in as_list(self.run(commands.cancel(sum(refused, []))))]
                break
            pending = refused
        return done

    def timeout(self, *jids: str) -> None:
        """Expire running jobs' locks now."""
        for chunk in _chunks(check.jids(jids)):
            self.run(commands.timeout(chunk))

    def track(self, jid: str) -> bool:
        """Track a job (raises `JobNotFoundError` if it does not exist)."""
        return _flag(self.run(commands.track(jid)))

    def untrack(self, jid: str) -> bool:
        """Stop tracking a job; False if it was not tracked.

        A tracked jid whose job is gone is dropped from the tracked set directly: the
        script refuses to untrack it, so it would stay listed for ever.
        """
        if self.get_job(jid) is None:
            return bool(self.redis.zrem(keys.TRACKED, jid))
        return _flag(self.run(commands.untrack(jid)))

    def tracked(self) -> Tracked:
        """Tracked jobs, and tracked jids whose job is gone."""
        reply = json.loads(self.run(commands.tracked()))
        return Tracked(
            jobs=tuple(Job(self, obj) for obj in as_list(reply.get("jobs"))),
            expired=tuple(str(j) for j in as_list(reply.get("expired"))),
        )

    def tracked_count(self) -> int:
        """How many jids are tracked."""
        return int(self.redis.zcard(keys.TRACKED))

    def tracked_jids(self, offset: int = 0, count: int = 25) -> list[str]:
        """One page of tracked jids, most recently tracked first (no job is read)."""
        # `track` answers with every tracked job at once; the set itself pages cheaply.
        start = check.offset(offset)
        return _texts(self.redis.zrevrange(keys.TRACKED, start, start + check.count(count) - 1))

    def tracked_states(self, limit: int = TRACKED_STATE_LIMIT) -> list[tuple[str, str]]:
        """(jid, state) of the `limit` most recently tracked jids.

        A running job whose lease has run out counts as `stalled`; a job that no longer
        exists counts as `gone`.
        """
        jids = _texts(self.redis.zrevrange(keys.TRACKED, 0, limit - 1))
        with self.redis.pipeline(transaction=False) as pipe:
            for jid in jids:
                pipe.hmget(keys.job(jid), "state", "expires")
            found = pipe.execute()
        now = self.now()
        return [(jid, shown_state(fields, now)) for jid, fields in zip(jids, found, strict=True)]

    def next_due(self, queues: Iterable[str]) -> float | None:
        """When the first scheduled job or recurring spawn of `queues` falls due, if any."""
        with self.redis.pipeline(transaction=False) as pipe:
            for name in queues:
                for kind in ("scheduled", "recur"):
                    pipe.zrange(keys.queue_set(name, kind), 0, 0, withscores=True)
            firsts = pipe.execute()
        scores = [float(found[0][1]) for found in firsts if found]
        return min(scores) if scores else None

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
        reply = self.run(commands.completed(offset, count))
        return [str(j) for j in as_list(reply)]

    def failed(self) -> dict[str, int]:
        """Failure groups and how many jobs each holds."""
        reply = json.loads(self.run(commands.failed()))
        return {str(group): int(n) for group, n in (reply or {}).items()}

    def failed_jobs(self, group: str, start: int = 0, limit: int = 25) -> Page:
        """One page of a failure group, newest first."""
        total, jids = self.failed_jids(group, start, limit)
        return self._page(total, jids)

    def failed_jids(self, group: str, start: int = 0, limit: int = 25) -> tuple[int, list[str]]:
        """(size of a failure group, one page of its jids), newest first; no job is read."""
        return _jid_page(json.loads(self.run(commands.failed_group(group, start, limit))))

    def unfail(self, queue: str, group: str, count: int = 25) -> int:
        """Put the `count` oldest jobs of a failure group back into `queue`; returns how many."""
        return int(self.run(commands.unfail(queue, group, count)))

    def tagged(self, tag: str, offset: int = 0, count: int = 25) -> Page:
        """One page of the jobs carrying `tag`."""
        return self._page(*self.tagged_jids(tag, offset, count))

    def tagged_jids(self, tag: str, offset: int = 0, count: int = 25) -> tuple[int, list[str]]:
        """(how many jobs carry `tag`, one page of their jids); no job is read."""
        return _jid_page(json.loads(self.run(commands.tagged(tag, offset, count))))

    def top_tags(self, offset: int = 0, count: int = 25) -> list[str]:
        """Tags carried by at least two jobs, most used first."""
        reply = self.run(commands.top_tags(offset, count))
        return [str(t) for t in as_list(json.loads(reply))]

    def events(self, *, worker: str | None = None) -> EventListener:
        """A listener on the plain channels, plus `ql:w:<worker>` when a worker is given."""
        return EventListener(self, worker=worker)

    def _page(self, total: int, jids: list[str]) -> Page:
        """A Page of jids, with their jobs fetched."""
        return Page(total=total, jids=tuple(jids), jobs=tuple(self.get_jobs(jids)))


def _chunks(items: list[str]) -> list[list[str]]:
    """Split a list into batches of at most `CHUNK`."""
    return [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]


def _texts(values: Iterable[Any]) -> list[str]:
    """Redis reply items as text, whatever the connection's decode_responses is."""
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in values]


def shown_state(fields: list[Any], now: float) -> str:
    """The state shown for a tracked job's raw (state, expires) hash fields."""
    state, expires = (None if f is None else _texts([f])[0] for f in fields)
    if state is None:
        return "gone"
    if state == "running" and _number(expires) <= now:
        return "stalled"
    return state


def _number(text: str | None) -> float:
    """A numeric hash field; infinity when absent or unreadable (never counted as expired)."""
    try:
        return float(text) if text else float("inf")
    except ValueError:
        return float("inf")


def _jid_page(reply: Mapping[str, Any]) -> tuple[int, list[str]]:
    """(total, jids) from a `{total, jobs: [jid...]}` reply."""
    return int(reply.get("total", 0)), [str(j) for j in as_list(reply.get("jobs"))]


def _flag(reply: str) -> bool:
    """Decode the JSON text "1"/"0" that track and untrack reply with."""
    # A non-empty string is always truthy: the reply must be decoded, not tested.
    return bool(json.loads(reply))
