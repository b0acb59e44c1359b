"""Django-facing errors, plus the core client's errors re-exported for one import path."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from .core.exceptions import (
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
    ReplicationError,
    RetryJob,
    ScriptArgumentError,
    ScriptError,
    UnknownJobError,
)

__all__ = [
    "BadPayloadError",
    "ConfigValueError",
    "DependencyError",
    "DuplicateJobError",
    "InvalidArgumentError",
    "InvalidJobError",
    "JobDataError",
    "JobGoneError",
    "JobNotFoundError",
    "JobStateError",
    "LockLostError",
    "PayloadTooLargeError",
    "QueueFullError",
    "QlessConfigurationError",
    "ReplicationError",
    "QlessError",
    "RetryJob",
    "ScriptArgumentError",
    "ScriptError",
    "UnknownJobError",
]


class QlessConfigurationError(ImproperlyConfigured, QlessError):
    """The `QLESS` setting is malformed; the message names the offending key."""


class InvalidJobError(InvalidArgumentError):
    """A job definition was refused: nested function, lambda, bad option or bad override."""


class DuplicateJobError(InvalidJobError):
    """Two different functions were registered under the same klass name."""


class BadPayloadError(QlessError, ValueError):
    """A job's data is not `{"args": [...], "kwargs": {...}}` matching the function."""
