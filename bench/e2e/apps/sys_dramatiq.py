"""dramatiq side: a Redis broker (for `dramatiq sys_dramatiq`) and its actors."""

from __future__ import annotations

import os

import dramatiq
import jobbody
from dramatiq.brokers.redis import RedisBroker

broker = RedisBroker(url=os.environ["BENCH_REDIS_URL"])  # type: ignore[no-untyped-call,unused-ignore]
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name="bench", max_retries=0)  # type: ignore[untyped-decorator,unused-ignore]
def noop() -> None:
    """Count one execution."""
    jobbody.noop()


@dramatiq.actor(queue_name="bench", max_retries=0)  # type: ignore[untyped-decorator,unused-ignore]
def latency(put_at: float) -> None:
    """Record the pickup latency."""
    jobbody.latency(put_at)


def put_noop() -> None:
    """Enqueue one no-op job."""
    noop.send()


def put_latency(put_at: float) -> None:
    """Enqueue one latency job."""
    latency.send(put_at)
