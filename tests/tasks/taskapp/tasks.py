"""Tasks the tests enqueue, resolve and run."""

from __future__ import annotations

from typing import Any

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
