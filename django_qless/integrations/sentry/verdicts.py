"""What a job's exception means for Sentry: a failure to capture, or an interruption."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sentry_sdk.consts import SPANSTATUS

from ...core.exceptions import RetryJob
from ...core.hooks import JobRun


@dataclass(frozen=True)
class Verdict:
    """Whether the exception is captured, the transaction's status, the failure group."""

    reported: bool
    status: str
    group: str


def verdict_of(run: JobRun, exc: BaseException) -> Verdict:
    """How the worker will settle a job that raised `exc`, as Sentry is told of it."""
    # Imported in the worker, where run hooks run: the worker needs Django.
    from ...worker.failures import group_for  # noqa: PLC0415
    from ...worker.interrupt import JobInterrupted, TimeLimitExceeded  # noqa: PLC0415

    group = group_for(run.queue, exc)
    if isinstance(exc, RetryJob):
        # Asked for by the job: retried with its delay, no failure of its code.
        return Verdict(False, SPANSTATUS.ABORTED, exc.group or group)
    if isinstance(exc, TimeLimitExceeded):
        return Verdict(True, SPANSTATUS.DEADLINE_EXCEEDED, group)
    if isinstance(exc, JobInterrupted | asyncio.CancelledError):
        # A lost lock, a cancellation, the shutdown deadline: stopped from outside, and
        # handed back or left to its new owner; no attempt of the job failed.
        return Verdict(False, SPANSTATUS.CANCELLED, group)
    if isinstance(exc, Exception | SystemExit):  # what the worker fails the job with
        return Verdict(True, SPANSTATUS.INTERNAL_ERROR, group)
    return Verdict(False, SPANSTATUS.CANCELLED, group)
