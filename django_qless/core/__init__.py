"""Django-free qless client: script loading, client, queues, jobs, events."""

from .client import Client
from .config import Config
from .events import Event, EventListener
from .exceptions import (
    ConfigValueError,
    DependencyError,
    InvalidArgumentError,
    JobDataError,
    JobGoneError,
    JobNotFoundError,
    JobStateError,
    LockLostError,
    PayloadTooLargeError,
    QlessError,
    QueueFullError,
    RetryJob,
    ScriptArgumentError,
    ScriptError,
    UnknownJobError,
)
from .job import Job
from .queue import Queue
from .records import (
    Failure,
    HistoryEntry,
    Page,
    QueueCounts,
    Stats,
    Timing,
    Tracked,
    WorkerCounts,
    WorkerJobs,
)
from .recurring import RecurringJob
from .script import QlessScript, script_sha, script_text
from .workers import Workers

__all__ = [
    "Client",
    "Config",
    "ConfigValueError",
    "DependencyError",
    "Event",
    "EventListener",
    "Failure",
    "HistoryEntry",
    "InvalidArgumentError",
    "Job",
    "JobDataError",
    "JobGoneError",
    "JobNotFoundError",
    "JobStateError",
    "LockLostError",
    "Page",
    "PayloadTooLargeError",
    "QueueFullError",
    "QlessError",
    "QlessScript",
    "Queue",
    "QueueCounts",
    "RecurringJob",
    "RetryJob",
    "ScriptArgumentError",
    "ScriptError",
    "Stats",
    "Timing",
    "Tracked",
    "UnknownJobError",
    "WorkerCounts",
    "WorkerJobs",
    "Workers",
    "script_sha",
    "script_text",
]
