"""Helpers of the cron tests: a stored schedule, simulated ticks, and the jobs they put."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

import redis

from django_qless.core import Client
from django_qless.core.crons import CronDefinition, CronStore
from django_qless.schedules import MANAGED_TAG

QUEUE = "cron"


def define(client: Client, expression: str, *, tz: str = "UTC", catch_up: str = "latest",
           name: str = "sched", args: tuple[str, ...] = ("t",)) -> CronDefinition:
    """Store a cron schedule as a sync would, starting from the client's now."""
    definition = CronDefinition(
        name=name, expression=expression, tz=tz, catch_up=catch_up, klass="recurapp.vacuum",
        queue=QUEUE, data=json.dumps({"args": list(args), "kwargs": {}}), priority=0.0,
        tags=(MANAGED_TAG,), retries=5,
    )
    store = CronStore(client)
    with client.redis.pipeline() as pipe:
        store.queue_save(pipe, definition, client.now())
        pipe.execute()
    return definition


def utc(text: str) -> float:
    """Epoch seconds of a UTC `YYYY-MM-DD HH:MM[:SS]`."""
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc).timestamp()


def local(text: str, tz: str, fold: int = 0) -> float:
    """Epoch seconds of a wall time in zone `tz`."""
    import zoneinfo  # noqa: PLC0415

    return dt.datetime.fromisoformat(text).replace(tzinfo=zoneinfo.ZoneInfo(tz),
                                                   fold=fold).timestamp()


@dataclass(frozen=True)
class Put:
    """A slot job found in Redis: its jid, state, and when it becomes runnable."""

    jid: str
    state: str
    runs_at: float | None


def slot_jobs(client: Client, name: str = "sched") -> list[Put]:
    """Every job of the schedule in Redis (any state), by run time."""
    raw: redis.Redis = client.redis
    from django_qless.core.crons import jid_stem  # noqa: PLC0415

    names = ((key.decode() if isinstance(key, bytes) else key).removeprefix("ql:j:")
             for key in raw.scan_iter(f"ql:j:{jid_stem(name)}-*", count=1000))
    # A job's history and dependency keys share its prefix; a jid has three dashes.
    jids = sorted(jid for jid in names if jid.count("-") == 3)
    found = []
    for job in client.get_jobs(jids):
        score = raw.zscore(f"ql:q:{job.queue_name}-scheduled", job.jid)
        found.append(Put(job.jid, job.state, score))
    return sorted(found, key=lambda p: (slot_of(p.jid), p.jid))


def slot_of(jid: str) -> int:
    """The slot epoch second written in a slot jid."""
    return int(jid.split("-")[2])


def tick_until(client: Client, clock: object, end: float, step: float = 20.0) -> None:
    """Tick as workers would (every `step` seconds of the clock) until `end`."""
    store = CronStore(client)
    while clock.now < end:  # type: ignore[attr-defined]
        store.create_due()
        clock.advance(step)  # type: ignore[attr-defined]
    store.create_due()


def tick_through(client: Client, clock: object, end: float, early: float = 30.0) -> None:
    """Look when a worker would first see each slot (`early` seconds ahead) until `end`:
    months of schedule without a look every few seconds."""
    store = CronStore(client)
    raw: redis.Redis = client.redis
    while True:
        store.create_due()
        following = raw.zscore("ql:django_qless:crons", "sched")
        if following is None or following > end:
            return
        clock.now = max(clock.now, following - early)  # type: ignore[attr-defined]
