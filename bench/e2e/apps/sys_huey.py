"""huey side: a RedisHuey instance (for `huey_consumer sys_huey.huey`) and its tasks."""

from __future__ import annotations

import os

import jobbody
from huey import RedisHuey

huey = RedisHuey("bench", url=os.environ["BENCH_REDIS_URL"])


@huey.task()  # type: ignore[untyped-decorator]
def noop() -> None:
    """Count one execution."""
    jobbody.noop()


@huey.task()  # type: ignore[untyped-decorator]
def latency(put_at: float) -> None:
    """Record the pickup latency."""
    jobbody.latency(put_at)


def put_noop() -> None:
    """Enqueue one no-op job."""
    noop()


def put_latency(put_at: float) -> None:
    """Enqueue one latency job."""
    latency(put_at)
