"""Structured logging of the job and worker signals on the `django_qless` logger.

Every record carries its fields in `extra` (jid, queue, klass, worker, ...), so a JSON
formatter picks them up; configure handlers in LOGGING, the library installs none. Each
receiver returns at once when its level is disabled: they run twice per job in the worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.dispatch import Signal

from . import signals

logger = logging.getLogger("django_qless")

Receiver = Callable[..., None]

_JOB_FIELDS = ("jid", "queue", "klass", "attempt", "worker", "connection", "duration", "group",
               "delay", "remaining")


def _logs(signal: Signal, level: int) -> Callable[[Receiver], Receiver]:
    """Connect a log receiver of `signal` (dispatch_uid `django_qless.<its name>`), and tell
    `signals.send` that it logs at `level`: while that level is off a send it would be the
    only receiver of is skipped."""

    def connect(function: Receiver) -> Receiver:
        uid = f"django_qless.{function.__name__}"
        signal.connect(function, dispatch_uid=uid)
        signals.LOG_RECEIVERS[signal] = (uid, level)
        return function

    return connect


def _extra(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The fields worth logging; `exception` goes in exc_info, not in extra."""
    return {name: kwargs[name] for name in _JOB_FIELDS if name in kwargs}


def _job(kwargs: dict[str, Any]) -> str:
    """`klass jid`: what ran, then which run of it."""
    klass = kwargs.get("klass")
    return f"{klass} {kwargs.get('jid')}" if klass else str(kwargs.get("jid"))


def _seconds(value: object) -> str:
    """A duration as people read it: `8 ms`, `1.25 s`, `42 s`, `3 min 4 s`."""
    seconds = float(value) if isinstance(value, int | float) else 0.0
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


@_logs(signals.job_enqueued, logging.INFO)
def log_job_enqueued(sender: object, **kwargs: Any) -> None:
    """Log an enqueue at INFO."""
    if not logger.isEnabledFor(logging.INFO):
        return
    logger.info("qless job %s enqueued in %s", _job(kwargs), kwargs.get("queue"),
                extra=_extra(kwargs))


@_logs(signals.job_started, logging.DEBUG)
def log_job_started(sender: object, **kwargs: Any) -> None:
    """Log the start of a job at DEBUG (completion and failure are logged at INFO/ERROR)."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    logger.debug("qless job %s started", _job(kwargs), extra=_extra(kwargs))


@_logs(signals.job_completed, logging.INFO)
def log_job_completed(sender: object, **kwargs: Any) -> None:
    """Log a completed job at INFO."""
    if not logger.isEnabledFor(logging.INFO):
        return
    logger.info("qless job %s completed in %s", _job(kwargs),
                _seconds(kwargs.get("duration")), extra=_extra(kwargs))


@_logs(signals.job_failed, logging.ERROR)
def log_job_failed(sender: object, **kwargs: Any) -> None:
    """Log a failed job with its traceback at ERROR."""
    if not logger.isEnabledFor(logging.ERROR):
        return
    logger.exception("qless job %s failed after %s (%s)", _job(kwargs),
                     _seconds(kwargs.get("duration")), kwargs.get("group"),
                     exc_info=kwargs.get("exception"), extra=_extra(kwargs))


@_logs(signals.job_retried, logging.WARNING)
def log_job_retried(sender: object, **kwargs: Any) -> None:
    """Log a retry in one line at WARNING; the traceback that caused it at DEBUG (a retry is
    expected: its traceback is in the job's history)."""
    if not logger.isEnabledFor(logging.WARNING):
        return
    remaining = kwargs.get("remaining")
    left = "" if remaining is None else f"; {remaining} {_retries(remaining)} left"
    logger.warning("qless job %s in %s retried in %s (%s)%s", _job(kwargs), kwargs.get("queue"),
                   _seconds(kwargs.get("delay")), _reason(kwargs.get("exception")), left,
                   extra=_extra(kwargs))
    if logger.isEnabledFor(logging.DEBUG) and isinstance(kwargs.get("exception"), BaseException):
        logger.debug("qless job %s retried after", _job(kwargs), exc_info=kwargs["exception"],
                     extra=_extra(kwargs))


#: Longest reason in a retry's log line.
REASON_MAX = 200


def _reason(exc: object) -> str:
    """The first line of an exception, after its class name (unless it starts with it)."""
    if not isinstance(exc, BaseException):
        return "no exception"
    name = type(exc).__name__
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    reason = text if text.startswith(f"{name}:") else f"{name}: {text}" if text else name
    return reason if len(reason) <= REASON_MAX else reason[: REASON_MAX - 3] + "..."


def _retries(count: object) -> str:
    """`retry` or `retries`."""
    return "retry" if count == 1 else "retries"


@_logs(signals.job_lock_lost, logging.WARNING)
def log_job_lock_lost(sender: object, **kwargs: Any) -> None:
    """Log a lost lease at WARNING: another worker may now be running the job."""
    if not logger.isEnabledFor(logging.WARNING):
        return
    logger.warning("qless job %s lost its lock", _job(kwargs), extra=_extra(kwargs))


@_logs(signals.worker_started, logging.INFO)
def log_worker_started(sender: object, **kwargs: Any) -> None:
    """Log a worker start at INFO."""
    if not logger.isEnabledFor(logging.INFO):
        return
    logger.info("qless worker %s started on %s", kwargs.get("worker"),
                ", ".join(kwargs.get("queues") or ()), extra=_extra(kwargs))


@_logs(signals.worker_stopped, logging.INFO)
def log_worker_stopped(sender: object, **kwargs: Any) -> None:
    """Log a worker stop at INFO."""
    if not logger.isEnabledFor(logging.INFO):
        return
    logger.info("qless worker %s stopped", kwargs.get("worker"), extra=_extra(kwargs))
