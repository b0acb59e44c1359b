"""Jobs of the test app, found by autodiscovery (nothing imports this module directly)."""

from __future__ import annotations

from typing import Any

from django_qless import qless_job
from django_qless.core import Job
from django_qless.retry import RetryPolicy

#: What the jobs below did, for the tests to inspect.
CALLS: list[tuple[str, Any]] = []
#: The job objects `echo` was given.
SEEN_JOBS: list[Any] = []


@qless_job
def add(a: int, b: int) -> int:
    """Add two numbers."""
    CALLS.append(("add", (a, b)))
    return a + b


@qless_job(
    queue="emails",
    priority=10,
    tags=["mail", "welcome"],
    retries=3,
    retry_policy=RetryPolicy(backoff=1, factor=2, max_delay=30, jitter=0),
    time_limit=20,
)
def send_welcome(user_id: int, *, template: str = "welcome") -> str:
    """Pretend to send a welcome e-mail."""
    CALLS.append(("send_welcome", (user_id, template)))
    return f"{template}:{user_id}"


@qless_job(takes_job=True, name="testapp.echo")
def echo(job: Job, value: Any) -> Any:
    """Return the value and record which job ran it."""
    CALLS.append(("echo", (job.jid, value)))
    SEEN_JOBS.append(job)
    return value


@qless_job
def explode(message: str) -> None:
    """Always fail."""
    raise RuntimeError(message)
