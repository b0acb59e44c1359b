"""When a worker stops by itself: after `max_jobs` jobs, or above `max_memory_mb` (job thread)."""

from __future__ import annotations

import time

from .options import WorkerOptions
from .rss import rss_mb
from .state import StopState

#: How often (seconds) resident memory is measured for `max_memory_mb`.
MEMORY_CHECK_EVERY = 1.0


class Limits:
    """Requests a stop once the worker has run its `max_jobs` or outgrown `max_memory_mb`."""

    def __init__(self, options: WorkerOptions, stop: StopState) -> None:
        self.max_jobs = options.max_jobs
        self.max_memory_mb = options.max_memory_mb
        self.stop = stop
        self._memory_checked = 0.0

    def check(self, jobs: int) -> None:
        """Stop after `jobs` jobs if that is the limit; measure memory at most once a second."""
        if self.max_jobs is not None and jobs >= self.max_jobs:
            self.stop.request(f"max jobs ({self.max_jobs}) reached")
        ceiling = self.max_memory_mb
        now = time.monotonic()
        if ceiling is not None and now - self._memory_checked >= MEMORY_CHECK_EVERY:
            self._memory_checked = now
            used = rss_mb()
            if used > ceiling:
                self.stop.request(f"memory {used:.0f} MiB above max {ceiling} MiB")
