"""What a worker does: its queues, order, limits and timings, from settings and the command line."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..conf import WorkerSettings, get_settings, worker_default


@dataclass(frozen=True)
class WorkerOptions(WorkerSettings):
    """Everything a `Worker` needs to know besides its Redis connection.

    The fields `QLESS['WORKER']` can set come from `WorkerSettings`; these add the ones
    only the command line or the caller sets.
    """

    burst: bool = worker_default("burst")
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
