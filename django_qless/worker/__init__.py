"""The qless worker: `Worker` runs jobs serially; `Supervisor` keeps N worker processes."""

from .interrupt import JobInterrupted, LockLost, ShutdownTimeout, TimeLimitExceeded
from .loop import Worker
from .options import WorkerOptions
from .supervisor import Supervisor

__all__ = [
    "JobInterrupted",
    "LockLost",
    "ShutdownTimeout",
    "Supervisor",
    "TimeLimitExceeded",
    "Worker",
    "WorkerOptions",
]
