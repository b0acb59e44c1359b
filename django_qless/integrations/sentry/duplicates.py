"""The log lines that would report a failure twice: the worker's, and django.tasks' own.

The worker logs a failed job at ERROR (`django_qless` logger) and Django's Tasks framework
logs a failed task with `logger.exception`; Sentry's LoggingIntegration turns both into
events. Once the run hook has captured a failure, those events are dropped here (their
breadcrumbs stay). A failure the run hook never saw (an unknown klass, a child process
killed at its hard limit) is still reported through the log line.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any

#: The logger of the worker's job lines, and those of Django's Tasks framework.
JOB_LOGGER = "django_qless"
TASK_LOGGERS = frozenset({"django.tasks", "django_tasks"})
#: Captured attempts remembered (the log line follows its capture within the same job).
REMEMBERED = 1024

_lock = threading.Lock()
#: (jid, attempt) of each attempt whose failure was captured in this process.
_captured: OrderedDict[tuple[str, int], None] = OrderedDict()


def captured(jid: str, attempt: int) -> None:
    """Remember that this attempt's failure was captured."""
    with _lock:
        _captured[(jid, attempt)] = None
        while len(_captured) > REMEMBERED:
            _captured.popitem(last=False)


def was_captured(jid: object, attempt: object = None) -> bool:
    """Whether the attempt (any attempt, when None) of `jid` was captured here."""
    with _lock:
        if attempt is not None:
            return (jid, attempt) in _captured
        return any(key[0] == jid for key in _captured)


def reported_by_log_line(hint: dict[str, Any]) -> bool:
    """Whether an event comes from a log line about a failure captured already."""
    record = hint.get("log_record")
    if not isinstance(record, logging.LogRecord) or record.levelno < logging.ERROR:
        return False
    if record.name == JOB_LOGGER:
        return _job_line(record)
    if record.name in TASK_LOGGERS:
        # "Task id=%s path=%s state=%s": the task's id is its job's jid.
        args = record.args
        return isinstance(args, tuple) and bool(args) and was_captured(args[0])
    return False


def _job_line(record: logging.LogRecord) -> bool:
    """A job line whose failure the run hook saw: here, or in an isolated job's child."""
    jid, attempt = getattr(record, "jid", None), getattr(record, "attempt", None)
    if jid is None or not isinstance(attempt, int):
        return False
    if was_captured(jid, attempt):
        return True
    failure = record.exc_info[1] if record.exc_info else None
    # The child ran the run hooks around the real exception (its Sentry client is the
    # worker's, inherited at the fork): it captured the failure there.
    return bool(getattr(failure, "ran_hooks", False))
