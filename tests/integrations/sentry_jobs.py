"""Jobs the Sentry tests run: each leaves a breadcrumb and a tag of its own, some fail."""

from __future__ import annotations

import asyncio
import time

import sentry_sdk

from django_qless import qless_job
from django_qless.core import Job
from django_qless.retry import RetryPolicy


def leave_traces(jid: str) -> None:
    """What a job leaves in its scope: a breadcrumb and a tag."""
    sentry_sdk.add_breadcrumb(message=f"crumb of {jid}")
    sentry_sdk.set_tag("left_by", jid)


@qless_job(name="sentry.crumbs", takes_job=True)
def crumbs(job: Job, pause: float = 0.0, fail: bool = False, password: str = "") -> None:
    """Leaves its traces, pauses (so concurrent jobs overlap), fails when asked to."""
    leave_traces(job.jid)
    time.sleep(pause)
    if fail:
        raise ValueError(f"failed {job.jid}")


@qless_job(name="sentry.acrumbs", takes_job=True)
async def acrumbs(job: Job, pause: float = 0.0, fail: bool = False) -> None:
    """The same, awaited on the worker's event loop."""
    leave_traces(job.jid)
    await asyncio.sleep(pause)
    if fail:
        raise ValueError(f"failed {job.jid}")


@qless_job(name="sentry.flaky", retries=1,
           retry_policy=RetryPolicy(backoff=0, jitter=0, retry_on=(ValueError,)))
def flaky() -> None:
    """Fails every attempt; retried once at once, then failed."""
    raise ValueError("flaky")


@qless_job(name="sentry.ok")
def ok() -> None:
    """Succeeds."""
