"""The worker's side of a task: find it by module path safely, then call it.

A klass read from Redis is never imported unless it lies in an installed app: anyone who
can write to Redis can choose it, and importing a module runs its code.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

from ..coroutines import invoke
from .compat import Task, TaskContext, TaskResult, TaskResultStatus, task_backends
from .payload import read_call


def in_installed_app(module: str) -> bool:
    """Whether a module path is an installed app's package or lies inside one."""
    return any(
        module == config.name or module.startswith(config.name + ".")
        for config in apps.get_app_configs()
    )


def resolve_task(klass: str) -> Task[Any, Any] | None:
    """The Tasks task a job's klass names, or None (nothing outside installed apps is imported).

    Only `module.function` paths inside an installed app are imported, and only a `Task`
    whose backend is a `QlessBackend` is returned.
    """
    from .backend import QlessBackend  # noqa: PLC0415 - the backend module imports this one

    module, _, name = klass.rpartition(".")
    if not module or not name.isidentifier() or not in_installed_app(module):
        return None
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    if not isinstance(found, Task) or found.module_path != klass:
        return None
    try:
        backend = task_backends[found.backend]
    except ImproperlyConfigured:  # an alias TASKS does not configure (or configures badly)
        return None
    return found if isinstance(backend, QlessBackend) else None


def call_arguments(task: Task[Any, Any], job_data: Mapping[str, Any], attempt: int,
                   worker_id: str, *, jid: str = "") -> tuple[list[Any], dict[str, Any]]:
    """The arguments a task is called with: the job's, after a `TaskContext` if it takes one.

    `attempt` counts from 1. The context's result is RUNNING with one worker id per
    attempt; only this attempt's worker is known here, so it stands for the earlier ones.
    """
    args, kwargs, _marker = read_call(job_data)
    if task.takes_context:
        result: TaskResult[Any] = TaskResult(
            task=task, id=jid, status=TaskResultStatus.RUNNING, enqueued_at=None,
            started_at=None, finished_at=None, last_attempted_at=None, args=args,
            kwargs=kwargs, backend=task.backend, errors=[],
            worker_ids=[worker_id] * max(attempt, 1),
        )
        args = [TaskContext(task_result=result), *args]
    return args, kwargs


def run_task(task: Task[Any, Any], job_data: Mapping[str, Any], attempt: int,
             worker_id: str, *, jid: str = "") -> Any:
    """Call a task with a job's arguments (see `call_arguments`).

    An `async def` task is awaited on the worker's event loop when this runs in a worker,
    else through asgiref's `async_to_sync` (`coroutines.invoke`).
    """
    args, kwargs = call_arguments(task, job_data, attempt, worker_id, jid=jid)
    return invoke(task.func, args, kwargs)
