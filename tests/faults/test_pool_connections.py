"""Connections of a worker running 50 jobs at once: bounded by its slots, not growing with jobs.

One `--concurrency 50` worker drains short jobs that each write a row through Django's
ORM and read it back: plain functions and `async def` jobs (Django's async ORM), taken
in turns. On a SQLite file with connections closed after each job (CONN_MAX_AGE 0), and
on a PostgreSQL database with connections kept (None): each setting on one engine, to
keep the suite short (`QLESS_FAULTS_CONN_MAX_AGE` picks one for both; the worker treats
both engines alike). The jobs come in two halves, each drained
and followed by a second of idling. The test counts from outside what the worker holds:
on SQLite its descriptors open on the database file (/proc/<pid>/fd), on PostgreSQL the
backends of its sockets (pg_stat_activity); on Redis the CLIENT LIST entries of its
sockets. Pass: every job ran once and wrote its row; the database connections never
exceed the slots plus a few (the outbox sweeper's, the main thread's); neither count is
higher, idle, after the second half than after the first; idle with CONN_MAX_AGE 0, the
worker holds no database connection.

2,000 jobs here; $QLESS_FAULTS_CONNECTION_JOBS=10000 runs the 10,000 of the issue
(`python -m pytest tests/faults/test_pool_connections.py`, a few minutes).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from django_qless.core import Client
from tests.faults.checks import completed, outcome, put_jobs, qless_client
from tests.faults.fleet import FAST, Fleet
from tests.faults.outbox_db import SETTINGS, OutboxDatabase, PostgresDatabase, SqliteFile
from tests.faults.proc import local_ports, open_files
from tests.redis_harness import RedisServer

pytestmark = [pytest.mark.faults, pytest.mark.timeout(900)]

CONCURRENCY = 50
JOBS = int(os.environ.get("QLESS_FAULTS_CONNECTION_JOBS", "2000"))
#: Database connections beside the slots': the outbox sweeper's, the main thread's, a spare.
DATABASE_EXTRA = 3
#: Redis connections beside one per slot: the worker's, its monitor's and its listeners'.
REDIS_EXTRA = 8
SAMPLE_EVERY = 0.2
#: Longest wait for one half of the jobs to drain.
DRAIN_WITHIN = 300


@dataclass(frozen=True)
class Sample:
    """What the worker held at one moment of the drain."""

    completed: int
    database: int
    redis: int


def database_connections(db: OutboxDatabase, pid: int) -> int:
    """The worker's connections to the shared database."""
    if isinstance(db, SqliteFile):
        return open_files(pid, db.path)
    assert isinstance(db, PostgresDatabase)
    ports = sorted(local_ports(pid, db.cluster.port))
    (count,), = db.execute("SELECT count(*) FROM pg_stat_activity "
                           "WHERE datname = %s AND client_port = ANY(%s)", (db.name, ports))
    return int(count)


def redis_connections(server: RedisServer, pid: int) -> int:
    """The CLIENT LIST entries whose address is one of the worker's sockets."""
    ports = local_ports(pid, server.port)
    clients = server.client().client_list()
    return sum(1 for client in clients if int(client["addr"].rsplit(":", 1)[1]) in ports)


def drain(client: Client, server: RedisServer, db: OutboxDatabase, pid: int, jobs: int,
          klasses: tuple[str, ...]) -> tuple[list[str], list[Sample], Sample]:
    """Put `jobs` jobs (the klasses in turn) and sample while they drain; then idle a
    second and take one more sample. Returns the jids too."""
    done = completed(client)
    jids = [jid for n in range(jobs)
            for jid in put_jobs(client, 1, lambda _: {}, klass=klasses[n % len(klasses)])]
    samples: list[Sample] = []

    def sample() -> Sample:
        return Sample(completed(client), database_connections(db, pid),
                      redis_connections(server, pid))

    deadline = time.monotonic() + DRAIN_WITHIN
    while completed(client) < done + jobs and time.monotonic() < deadline:
        samples.append(sample())
        time.sleep(SAMPLE_EVERY)
    time.sleep(1.0)  # idle: what the worker keeps once it has nothing to do
    return jids, samples, sample()


def test_connections_at_concurrency_50_are_bounded_and_do_not_grow_with_jobs(
    server: RedisServer, database: OutboxDatabase, fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    max_age = os.environ.get("QLESS_FAULTS_CONN_MAX_AGE",
                             "0" if isinstance(database, SqliteFile) else "none")
    client = qless_client(server)
    fleet = fleets(server.url, 1, "q", *FAST, "--concurrency", str(CONCURRENCY),
                   restart=False, env={"DJANGO_SETTINGS_MODULE": SETTINGS,
                                       "QLESS_FAULTS_DB": database.setting,
                                       "QLESS_FAULTS_CONN_MAX_AGE": max_age})
    (pid,) = fleet.pids()
    klasses = ("faults.touch_db", "faults.atouch_db")
    started = time.monotonic()
    acked, first, middle = drain(client, server, database, pid, JOBS // 2, klasses)
    more, second, end = drain(client, server, database, pid, JOBS - JOBS // 2, klasses)
    drain_seconds = time.monotonic() - started
    every = first + second
    result = outcome(client, acked + more, fleet)
    (rows,), = database.execute("SELECT count(*) FROM faultsapp_touch")
    figures.update(result.figures(), engine=type(database).__name__, max_age=max_age,
                   rows=rows, drain_seconds=round(drain_seconds, 1), samples=len(every),
                   database_first_half=max(s.database for s in [*first, middle]),
                   database_second_half=max(s.database for s in [*second, end]),
                   database_idle=(middle.database, end.database),
                   redis_first_half=max(s.redis for s in [*first, middle]),
                   redis_second_half=max(s.redis for s in [*second, end]),
                   redis_idle=(middle.redis, end.redis))
    assert result.jobs == JOBS and result.lost == [] and result.duplicates == 0, fleet.output()
    assert rows == JOBS
    assert len(first) >= 5 and len(second) >= 5, "too few samples while the jobs drained"
    assert max(s.database for s in every) <= CONCURRENCY + DATABASE_EXTRA
    assert max(s.redis for s in every) <= CONCURRENCY + REDIS_EXTRA
    # Not growing with the jobs run: idle at the end, no more than idle in the middle
    # (while draining, the sweeper's connection comes and goes with CONN_MAX_AGE 0).
    assert end.database <= middle.database and end.redis <= middle.redis
    if max_age == "0":
        assert end.database == 0  # every job's connections closed after it, async ones too
    assert "Traceback" not in fleet.output()
