"""What a worker does: its queues, order, limits and timings, from settings and the command line."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..conf import Strategy, get_settings


@dataclass(frozen=True)
class WorkerOptions:
    """Everything a `Worker` needs to know besides its Redis connection."""

    queues: tuple[str, ...]
    strategy: Strategy = "ordered"
    processes: int = 1
    burst: bool = False
    max_jobs: int | None = None
    max_memory_mb: int | None = None
    #: Default per-job time limit in seconds; a job's own `time_limit` wins.
    time_limit: float | None = None
    shutdown_timeout: float = 30.0
    #: Longest idle sleep between two pop rounds when no event or due time wakes the worker.
    poll_interval: float = 5.0
    #: Jobs popped ahead of the running one while recent jobs are short (0: never).
    prefetch: int = 1
    #: Seconds between lease renewals of a running job; None = a third of the lease.
    heartbeat_interval: float | None = None
    #: Exact worker name (unique per process: leave None for `host-pid-random`).
    name: str | None = None
    #: Sleep a random 0..startup_delay seconds before the first pop (spreads restarts).
    startup_delay: float = 0.0
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
        values: dict[str, Any] = {
            "queues": worker.queues,
            "strategy": worker.strategy,
            "processes": worker.processes,
            "max_jobs": worker.max_jobs,
            "max_memory_mb": worker.max_memory_mb,
            "time_limit": worker.time_limit,
            "shutdown_timeout": worker.shutdown_timeout,
            "poll_interval": worker.poll_interval,
            "prefetch": worker.prefetch,
            "heartbeat_interval": worker.heartbeat_interval,
        }
        values.update({key: value for key, value in overrides.items() if value is not None})
        values["queues"] = tuple(dict.fromkeys(values["queues"]))
        return cls(**values)

    def replace(self, **changes: Any) -> WorkerOptions:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)
