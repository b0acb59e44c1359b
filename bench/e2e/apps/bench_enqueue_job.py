"""The job `bench/enqueue.py` puts: one integer argument, never run."""

from __future__ import annotations

from django_qless import qless_job


@qless_job(name="bench.record", queue="bench")
def record(number: int) -> None:
    """Do nothing: the enqueue bench only puts."""
