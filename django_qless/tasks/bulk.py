"""Bulk enqueue of a Django task: `enqueue_many(task, calls)` on the task's own backend.

On a `QlessBackend` it is `QlessBackend.enqueue_many`: every call checked as `enqueue`
checks one (Django's argument rules, JSON, payload size), all before anything is written
(a bad call raises its typed error, noting its position, and nothing is enqueued), then
the puts in few round trips (`core.put_many`), or on commit through the outbox inside a
transaction, each result's `task_enqueued` sent once its job is in Redis.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..enqueue.calls import Call, split_call
from .backend import QlessBackend
from .compat import Task, TaskResult


def enqueue_many(task: Task[Any, Any], calls: Iterable[Call]) -> list[TaskResult[Any]]:
    """Enqueue `task` once per `(args, kwargs)` call on its own backend, in few round trips
    on a `QlessBackend` (a task's `.using(...)` applies to every call); another backend
    enqueues the calls one by one."""
    backend = task.get_backend()
    if isinstance(backend, QlessBackend):
        return backend.enqueue_many(task, calls)
    results = []
    for call in calls:
        args, kwargs = split_call(call)
        results.append(task.enqueue(*args, **kwargs))
    return results
