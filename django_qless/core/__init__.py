"""Django-free qless client: script loading, client, queues, jobs, events."""

from . import commands, keys
from .batch import Batch, Reply, call_many
from .client import Client
from .commands import Command
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
    PartialPutError,
    PayloadTooLargeError,
    QlessError,
    QueueFullError,
    ReplicationError,
    RetryJob,
    ScriptArgumentError,
    ScriptError,
    ScriptNotLoadedError,
    UnknownJobError,
)
from .job import Job
from .queue import Queue
from .records import (
    Failure,
    HistoryEntry,
    Page,
    PutOutcome,
    QueueCounts,
    Stats,
    Timing,
    Tracked,
    WorkerCounts,
    WorkerJobs,
)
from .recurring import RecurringJob
from .replication import ReplicaAck
from .script import QlessScript, script_sha, script_text
from .workers import Workers

__all__ = [
    "Batch",
    "Client",
    "Command",
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
    "PartialPutError",
    "Page",
    "PayloadTooLargeError",
    "PutOutcome",
    "QueueFullError",
    "QlessError",
    "QlessScript",
    "Queue",
    "QueueCounts",
    "RecurringJob",
    "ReplicaAck",
    "ReplicationError",
    "Reply",
    "RetryJob",
    "ScriptArgumentError",
    "ScriptError",
    "ScriptNotLoadedError",
    "Stats",
    "Timing",
    "Tracked",
    "UnknownJobError",
    "WorkerCounts",
    "WorkerJobs",
    "Workers",
    "call_many",
    "commands",
    "keys",
    "script_sha",
    "script_text",
]
