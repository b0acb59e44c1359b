"""Tasks the tests enqueue, resolve and run."""

from __future__ import annotations

import asyncio
from typing import Any

from django_qless.core import RetryJob
from django_qless.tasks.compat import TaskContext
from tests.tasks.compat import task

#: Calls made by the tasks below, for the tests to inspect.
CALLS: list[tuple[str, Any]] = []


@task
def add(a: int, b: int) -> int:
    """Add two numbers."""
    CALLS.append(("add", (a, b)))
    return a + b


@task(queue_name="other", priority=5)
def shout(text: str, *, times: int = 1) -> str:
    """Upper-case a text, repeated."""
    return text.upper() * times


@task(takes_context=True)
def attempt_number(context: TaskContext, label: str) -> dict[str, Any]:
    """Report the attempt and result id the context carries."""
    return {"label": label, "attempt": context.attempt, "id": context.task_result.id}


@task
async def async_double(value: int) -> int:
    """An async task."""
    return value * 2


@task(backend="tagged")
def tagged(value: int) -> int:
    """A task on the backend with OPTIONS (tags, retries)."""
    return value


@task(backend="dummy")
def on_dummy() -> None:
    """A task whose backend is not a QlessBackend."""


def not_a_task() -> None:
    """A plain function in an installed app."""


@task
def record(label: str) -> str:
    """Record the order tasks run in."""
    CALLS.append(("record", label))
    return label


@task(takes_context=True)
def flaky_twice(context: TaskContext) -> int:
    """Asks for a retry on its first two attempts, then returns its attempt number."""
    if context.attempt <= 2:
        raise RetryJob(0, message=f"attempt {context.attempt} failed")
    return context.attempt


@task
def explode(message: str) -> None:
    """Always raises."""
    raise LookupError(message)


@task
def returns_a_set() -> Any:
    """Returns a value JSON cannot hold."""
    return {1, 2}


@task(backend="limited")
async def async_sleeps(label: str) -> None:
    """Sleeps past the backend's TIME_LIMIT; records its cancellation."""
    CALLS.append(("loop", asyncio.get_running_loop()))
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        CALLS.append(("cancelled", label))
        raise


@task(backend="limited")
async def async_quick(value: int) -> int:
    """An async task on the same backend, run after the one cancelled."""
    CALLS.append(("loop", asyncio.get_running_loop()))
    await asyncio.sleep(0)
    return value + 1
