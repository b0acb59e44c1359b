"""What each django_qless worker process publishes about itself, and reading it back.

qless knows a worker only by name and last-seen time (`ql:workers`). A `qless_worker`
process also keeps a hash of its own (`keys.worker_presence`) with an expiry a few times
its publishing interval: host, pid, version, queues, start time, current jobs, counts and
memory. The hash vanishes on its own when the process stops reporting; the index
(`keys.WORKER_PRESENCE_INDEX`) remembers the name, so a silent worker can be flagged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import redis

from . import keys

if TYPE_CHECKING:
    from .client import Client


@dataclass(frozen=True)
class RunningJob:
    """A job a worker is running: jid, klass and when it started (epoch seconds)."""

    jid: str
    klass: str
    started: float


@dataclass(frozen=True)
class KlassCount:
    """How many jobs of one klass a worker completed and failed."""

    klass: str
    done: int
    failed: int


@dataclass(frozen=True)
class Presence:
    """One worker process, as it last described itself."""

    name: str
    host: str
    pid: int
    version: str
    queues: tuple[str, ...]
    started: float
    seen: float
    done: int = 0
    failed: int = 0
    rss_bytes: int = 0
    processes: int = 1
    running: tuple[RunningJob, ...] = field(default=())
    #: The host's one-minute load average.
    load: float = 0.0
    #: CPU seconds the process used (user + system, every thread).
    cpu_seconds: float = 0.0
    #: The worker's settings that shape how it runs jobs, as (name, value) text pairs.
    settings: tuple[tuple[str, str], ...] = field(default=())
    #: Jobs finished per klass: (klass, completed, failed), busiest first.
    klasses: tuple[KlassCount, ...] = field(default=())
    #: Jobs that caught their interruption (time limit, lost lock) and ran on.
    swallowed: int = 0
    #: Who paused it from the admin; empty while it pops.
    paused_by: str = ""

    def fields(self) -> dict[str, str]:
        """The hash fields, as text."""
        return {
            "host": self.host, "pid": str(self.pid), "version": self.version,
            "queues": json.dumps(list(self.queues)), "started": repr(self.started),
            "seen": repr(self.seen), "done": str(self.done), "failed": str(self.failed),
            "rss_bytes": str(self.rss_bytes), "processes": str(self.processes),
            "running": json.dumps([[job.jid, job.klass, job.started] for job in self.running]),
            "load": repr(self.load), "cpu_seconds": repr(self.cpu_seconds),
            "settings": json.dumps(dict(self.settings)),
            "klasses": json.dumps([[k.klass, k.done, k.failed] for k in self.klasses]),
            "swallowed": str(self.swallowed), "paused_by": self.paused_by,
        }

    @classmethod
    def from_fields(cls, name: str, raw: dict[str, str]) -> Presence | None:
        """Parse a hash read back; None when it is not one of ours (malformed)."""
        try:
            return cls(
                name=name, host=raw["host"], pid=int(raw["pid"]), version=raw["version"],
                queues=tuple(str(q) for q in json.loads(raw["queues"])),
                started=float(raw["started"]), seen=float(raw["seen"]),
                done=int(raw["done"]), failed=int(raw["failed"]),
                rss_bytes=int(raw["rss_bytes"]), processes=int(raw.get("processes", "1")),
                running=tuple(RunningJob(str(j), str(k), float(s))
                              for j, k, s in json.loads(raw["running"])),
                # Absent from what older versions publish.
                load=float(raw.get("load", "0")),
                cpu_seconds=float(raw.get("cpu_seconds", "0")),
                settings=tuple((str(name), str(value)) for name, value
                               in json.loads(raw.get("settings", "{}")).items()),
                klasses=tuple(KlassCount(str(k), int(d), int(f))
                              for k, d, f in json.loads(raw.get("klasses", "[]"))),
                swallowed=int(raw.get("swallowed", "0")),
                paused_by=raw.get("paused_by", ""),
            )
        except (KeyError, ValueError, TypeError, AttributeError):
            return None


@dataclass(frozen=True)
class Listed:
    """A worker name from the index: its presence, or None once it stopped reporting."""

    name: str
    last_published: float
    presence: Presence | None


def publish(client: Client, presence: Presence, ttl: float) -> None:
    """Write the presence hash (expiring after `ttl` seconds) and index it, in one trip."""
    pipe = client.redis.pipeline(transaction=True)
    add_publication(pipe, presence, ttl)
    pipe.execute()


def add_publication(pipe: redis.client.Pipeline, presence: Presence, ttl: float) -> None:
    """Queue on `pipe` the commands of `publish` (to share a round trip with others)."""
    key = keys.worker_presence(presence.name)
    pipe.delete(key)
    pipe.hset(key, mapping=cast("dict[Any, Any]", presence.fields()))
    pipe.pexpire(key, max(1, int(ttl * 1000)))
    pipe.zadd(keys.WORKER_PRESENCE_INDEX, {presence.name: presence.seen})


def withdraw(client: Client, name: str) -> None:
    """A worker stopping cleanly: its hash and index entry go."""
    pipe = client.redis.pipeline(transaction=True)
    add_withdrawal(pipe, name)
    pipe.execute()


def add_withdrawal(pipe: redis.client.Pipeline, name: str) -> None:
    """Queue on `pipe` the commands of `withdraw`."""
    pipe.delete(keys.worker_presence(name))
    pipe.zrem(keys.WORKER_PRESENCE_INDEX, name)


def listed(client: Client, limit: int = 1000) -> list[Listed]:
    """The indexed workers, most recently published first, with their presence if live."""
    index = cast(list[tuple[Any, float]], client.redis.zrevrange(
        keys.WORKER_PRESENCE_INDEX, 0, limit - 1, withscores=True
    ))
    pipe = client.redis.pipeline(transaction=False)
    for name, _ in index:
        pipe.hgetall(keys.worker_presence(text(name)))
    hashes = pipe.execute() if index else []
    found = []
    for (name, score), raw in zip(index, hashes, strict=True):
        fields = {text(k): text(v) for k, v in raw.items()}
        presence = Presence.from_fields(text(name), fields) if fields else None
        found.append(Listed(text(name), float(score), presence))
    return found


def forget(client: Client, names: Sequence[str]) -> None:
    """Drop index entries and hashes of workers that stopped reporting."""
    if not names:
        return
    pipe = client.redis.pipeline(transaction=True)
    pipe.zrem(keys.WORKER_PRESENCE_INDEX, *names)
    pipe.delete(*(keys.worker_presence(name) for name in names))
    pipe.execute()


def text(value: Any) -> str:
    """A reply value as text, whether or not the connection decodes responses."""
    return value.decode() if isinstance(value, bytes) else str(value)
