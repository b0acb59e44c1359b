"""The benchmark's Django Tasks tasks: one definition, whichever backend TASKS names."""

from __future__ import annotations

import jobbody

try:  # Django 6 ships the framework; on 5.2 the django-tasks backport provides it
    from django.tasks import task  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    from django_tasks import task  # type: ignore[no-redef,unused-ignore]

QUEUE = "bench"


@task(queue_name=QUEUE)
def noop() -> None:
    """Count one execution."""
    jobbody.noop()


@task(queue_name=QUEUE)
def latency(put_at: float) -> None:
    """Record the pickup latency of this task."""
    jobbody.latency(put_at)
