"""RQ side: the job functions (imported by `rq worker`) and the driver's enqueue calls."""

from __future__ import annotations

import functools
import os

import jobbody
from redis import Redis
from rq import Queue

QUEUE = "bench"


def noop() -> None:
    """Count one execution."""
    jobbody.noop()


def latency(put_at: float) -> None:
    """Record the pickup latency."""
    jobbody.latency(put_at)


@functools.cache
def queue() -> Queue:
    """The bench queue on $BENCH_REDIS_URL."""
    return Queue(QUEUE, connection=Redis.from_url(os.environ["BENCH_REDIS_URL"]))


def put_noop() -> None:
    """Enqueue one no-op job."""
    queue().enqueue(noop)


def put_latency(put_at: float) -> None:
    """Enqueue one latency job."""
    queue().enqueue(latency, put_at)


def put_io(kind: str, put_at: float) -> None:
    """Enqueue one I/O job; RQ runs a coroutine function's result on an event loop of its own."""
    enqueue = queue().enqueue
    jobbody.put_io(kind, put_at, lambda at: enqueue(jobbody.io_async, at),
                   lambda name, at: enqueue(jobbody.run_io, name, at))
