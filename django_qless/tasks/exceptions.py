"""Errors of the Tasks backend that Django's own exceptions do not cover."""

from __future__ import annotations

from ..exceptions import QlessConfigurationError
from ..results import ResultNotStorableError
from .compat import InvalidTask

__all__ = [
    "NotQlessBackendError",
    "ResultNotStorableError",
    "TaskArgumentsError",
    "TaskDataError",
    "TaskScheduleError",
]


class TaskArgumentsError(InvalidTask, TypeError):
    """A task's arguments do not survive a JSON round trip; nothing was written to Redis.

    It is an `InvalidTask` (Django's refusal of a task) and a `TypeError`, the error Django's
    own argument normalisation raises for values JSON cannot hold.
    """


class TaskDataError(ValueError):
    """Job data read from Redis is not the shape this backend writes for a task."""


class TaskScheduleError(QlessConfigurationError):
    """A Django task named by a recurring schedule cannot be scheduled; the message says why."""


class NotQlessBackendError(TaskScheduleError):
    """A scheduled task's backend is not a `QlessBackend`: no qless worker would run it."""
