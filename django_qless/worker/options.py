"""What a worker does: its queues, order, limits and timings, from settings and the command line."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..conf import Strategy, WorkerSettings, get_settings, worker_default


@dataclass(frozen=True)
class WorkerOptions:
    """Everything a `Worker` needs to know besides its Redis connection."""

    queues: tuple[str, ...]
    strategy: Strategy = worker_default("strategy")
    processes: int = worker_default("processes")
    burst: bool = worker_default("burst")
    max_jobs: int | None = worker_default("max_jobs")
    max_memory_mb: int | None = worker_default("max_memory_mb")
    #: Default per-job time limit in seconds; a job's own `time_limit` wins.
    time_limit: float | None = worker_default("time_limit")
    shutdown_timeout: float = worker_default("shutdown_timeout")
    #: Longest idle sleep between two pop rounds when no event or due time wakes the worker.
    poll_interval: float = worker_default("poll_interval")
    #: Jobs popped ahead of the running one while recent jobs are short (0: never).
    prefetch: int = worker_default("prefetch")
    #: Seconds between lease renewals of a running job; None = a third of the lease.
    heartbeat_interval: float | None = worker_default("heartbeat_interval")
    #: Exact worker name (unique per process: leave None for `host-pid-random`).
    name: str | None = worker_default("name")
    #: Sleep a random 0..startup_delay seconds before the first pop (spreads restarts).
    startup_delay: float = worker_default("startup_delay")
    #: Install SIGTERM/SIGINT/SIGQUIT handlers (only possible in the main thread).
    handle_signals: bool = True
    #: pid of a supervising parent; the worker stops gracefully when that parent dies.
    parent_pid: int | None = None
    #: Seconds added to the worker's clock (fault tests simulate clock skew with it).
    clock_offset: float = 0.0

    @classmethod
    def from_settings(cls, **overrides: Any) -> WorkerOptions:
        """Defaults from `QLESS['WORKER']`, then the non-None `overrides` (command options)."""
        worker = get_settings().worker
        values = {field.name: getattr(worker, field.name)
                  for field in dataclasses.fields(WorkerSettings)}
        values.update({key: value for key, value in overrides.items() if value is not None})
        values["queues"] = tuple(dict.fromkeys(values["queues"]))
        return cls(**values)

    def replace(self, **changes: Any) -> WorkerOptions:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)
