"""The benchmark's jobs, registered like any project's (autodiscovered by the worker)."""

from __future__ import annotations

import jobbody

from django_qless import qless_job

QUEUE = "bench"


@qless_job(name="bench.noop", queue=QUEUE)
def noop() -> None:
    """Count one execution."""
    jobbody.noop()


@qless_job(name="bench.latency", queue=QUEUE)
def latency(put_at: float) -> None:
    """Record the pickup latency of this job."""
    jobbody.latency(put_at)


@qless_job(name="bench.io", queue=QUEUE)
def io(kind: str, put_at: float) -> None:
    """One synchronous I/O job of bench/io_e2e.py (sleep or http)."""
    jobbody.run_io(kind, put_at)


@qless_job(name="bench.io_async", queue=QUEUE)
async def io_async(put_at: float) -> None:
    """The async I/O job, on the worker process's event loop."""
    await jobbody.io_async(put_at)


@qless_job(name="bench.payload", queue=QUEUE)
def payload(blob: str) -> None:
    """Count one execution of a job carrying a large argument (bench/scale.py)."""
    jobbody.noop()
