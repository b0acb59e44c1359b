"""Driver side of every Tasks system: `.enqueue()` on the task, as an app would.

Which backend receives the task is the settings' choice ($DJANGO_SETTINGS_MODULE, one of
tasks_bench.settings_<system>), so the three systems put through the very same call.
"""

from __future__ import annotations

import django

django.setup()

from tasks_bench.tasks import latency, noop  # noqa: E402 - needs django.setup() first


def put_noop() -> None:
    """Enqueue one no-op task."""
    noop.enqueue()


def put_latency(put_at: float) -> None:
    """Enqueue one latency task."""
    latency.enqueue(put_at)
