"""dramatiq side: a Redis broker (for `dramatiq sys_dramatiq`) and its actors."""

from __future__ import annotations

import os

import dramatiq
import jobbody
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware.asyncio import AsyncIO
from redis import ConnectionPool

# A pool with room for every worker thread: `--threads 200` outgrows redis-py's default of 100.
pool = ConnectionPool.from_url(os.environ["BENCH_REDIS_URL"],
                               max_connections=jobbody.MAX_CONNECTIONS)
broker = RedisBroker(connection_pool=pool)  # type: ignore[no-untyped-call,unused-ignore]
if os.environ.get("BENCH_IO_KIND"):  # async actors need it; the no-op bench runs without
    broker.add_middleware(AsyncIO())
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name="bench", max_retries=0)  # type: ignore[untyped-decorator,unused-ignore]
def noop() -> None:
    """Count one execution."""
    jobbody.noop()


@dramatiq.actor(queue_name="bench", max_retries=0)  # type: ignore[untyped-decorator,unused-ignore]
def latency(put_at: float) -> None:
    """Record the pickup latency."""
    jobbody.latency(put_at)


@dramatiq.actor(queue_name="bench", max_retries=0)  # type: ignore[untyped-decorator,unused-ignore]
def io(kind: str, put_at: float) -> None:
    """One synchronous I/O job of bench/io_e2e.py."""
    jobbody.run_io(kind, put_at)


@dramatiq.actor(queue_name="bench", max_retries=0)  # type: ignore[untyped-decorator,unused-ignore]
async def io_async(put_at: float) -> None:
    """The async I/O job, on the worker process's event loop (AsyncIO middleware)."""
    await jobbody.io_async(put_at)


def put_noop() -> None:
    """Enqueue one no-op job."""
    noop.send()


def put_latency(put_at: float) -> None:
    """Enqueue one latency job."""
    latency.send(put_at)


def put_io(kind: str, put_at: float) -> None:
    """Enqueue one I/O job."""
    jobbody.put_io(kind, put_at, io_async.send, io.send)
