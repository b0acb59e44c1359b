"""Celery side: the app (for `celery -A sys_celery worker`), its tasks, no result backend."""

from __future__ import annotations

import os

import jobbody
from celery import Celery

app = Celery("sys_celery", broker=os.environ["BENCH_REDIS_URL"])
app.conf.update(
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@app.task(name="bench.noop")  # type: ignore[untyped-decorator]
def noop() -> None:
    """Count one execution."""
    jobbody.noop()


@app.task(name="bench.latency")  # type: ignore[untyped-decorator]
def latency(put_at: float) -> None:
    """Record the pickup latency."""
    jobbody.latency(put_at)


@app.task(name="bench.io")  # type: ignore[untyped-decorator]
def io(kind: str, put_at: float) -> None:
    """One I/O job of bench/io_e2e.py (no async tasks in Celery: see jobbody.run_io)."""
    jobbody.run_io(kind, put_at)


def put_noop() -> None:
    """Enqueue one no-op job."""
    noop.delay()


def put_latency(put_at: float) -> None:
    """Enqueue one latency job."""
    latency.delay(put_at)


def put_io(kind: str, put_at: float) -> None:
    """Enqueue one I/O job."""
    io.delay(kind, put_at)
