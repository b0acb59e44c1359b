"""django_qless side of the driver: puts through `JobDefinition.enqueue`, as an app would."""

from __future__ import annotations

import os

import django
import jobbody

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qless_bench.settings")
django.setup()

from qless_bench.qless_jobs import io, io_async, latency, noop  # noqa: E402 - needs setup()


def put_noop() -> None:
    """Enqueue one no-op job."""
    noop.enqueue()


def put_latency(put_at: float) -> None:
    """Enqueue one latency job."""
    latency.enqueue(put_at)


def put_io(kind: str, put_at: float) -> None:
    """Enqueue one I/O job."""
    jobbody.put_io(kind, put_at, io_async.enqueue, io.enqueue)
