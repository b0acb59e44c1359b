"""huey side: a RedisHuey instance (for `huey_consumer sys_huey.huey`) and its tasks."""

from __future__ import annotations

import os

import jobbody
from huey import RedisHuey
from redis import ConnectionPool

# A pool with room for every worker thread: `-w 200` outgrows redis-py's default of 100.
huey = RedisHuey("bench", connection_pool=ConnectionPool.from_url(
    os.environ["BENCH_REDIS_URL"], max_connections=jobbody.MAX_CONNECTIONS))


@huey.task()  # type: ignore[untyped-decorator]
def noop() -> None:
    """Count one execution."""
    jobbody.noop()


@huey.task()  # type: ignore[untyped-decorator]
def latency(put_at: float) -> None:
    """Record the pickup latency."""
    jobbody.latency(put_at)


@huey.task()  # type: ignore[untyped-decorator]
def io(kind: str, put_at: float) -> None:
    """One I/O job of bench/io_e2e.py (no async tasks in huey: see jobbody.run_io)."""
    jobbody.run_io(kind, put_at)


def put_noop() -> None:
    """Enqueue one no-op job."""
    noop()


def put_latency(put_at: float) -> None:
    """Enqueue one latency job."""
    latency(put_at)


def put_io(kind: str, put_at: float) -> None:
    """Enqueue one I/O job."""
    io(kind, put_at)
