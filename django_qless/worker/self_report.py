"""What a worker says about itself beyond counts: its settings, load, CPU and busiest klasses."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..core.presence import KlassCount
from .options import WorkerOptions
from .report import Outcome

#: Klasses published per worker: the busiest, so the hash stays small.
KLASSES_SHOWN = 50
#: Settings shown on the workers page, in this order (None values are left out).
SHOWN_SETTINGS = (
    "strategy", "concurrency", "prefetch", "isolation", "time_limit", "hard_time_limit",
    "job_memory_mb", "max_jobs", "max_memory_mb", "poll_interval", "shutdown_timeout",
)


def shown_settings(options: WorkerOptions) -> tuple[tuple[str, str], ...]:
    """The settings that shape how this worker runs jobs, as text."""
    pairs = ((name, getattr(options, name, None)) for name in SHOWN_SETTINGS)
    return tuple((name, str(getattr(value, "value", value))) for name, value in pairs
                 if value is not None)


def busiest_klasses(outcomes: Mapping[tuple[str, str], int]) -> tuple[KlassCount, ...]:
    """Completed and failed jobs per klass, busiest first, at most `KLASSES_SHOWN`."""
    done: dict[str, int] = {}
    failed: dict[str, int] = {}
    for (klass, outcome), count in outcomes.items():
        if outcome == Outcome.COMPLETED.value:
            done[klass] = done.get(klass, 0) + count
        elif outcome == Outcome.FAILED.value:
            failed[klass] = failed.get(klass, 0) + count
    names = sorted(done.keys() | failed.keys(),
                   key=lambda klass: (-(done.get(klass, 0) + failed.get(klass, 0)), klass))
    return tuple(KlassCount(klass, done.get(klass, 0), failed.get(klass, 0))
                 for klass in names[:KLASSES_SHOWN])


def load_average() -> float:
    """The host's one-minute load average (0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def cpu_seconds() -> float:
    """CPU time this process used, every thread, user and system."""
    times = os.times()
    return times.user + times.system
