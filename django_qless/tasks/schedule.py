"""Django Tasks tasks on a recurring schedule: a `QLESS["RECURRING"]` entry whose JOB is a task.

A task's schedule puts the job `QlessBackend.enqueue` would put for the same call: the
task's module path as klass, the backend's job data (with its `task` marker), the task's
queue and priority unless the schedule gives its own, the backend's tags and retries, on
the backend's connection. So a worker runs each spawned job as it runs an enqueued task
(`tasks.worker`), and `get_result(<jid>)` reads its result.
"""

from __future__ import annotations

import importlib
import inspect
import json
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

from ..connection import get_client
from ..core import validation
from ..schedules import MANAGED_TAG, schedule_jid
from .backend import QlessBackend
from .compat import InvalidTask, Task, task_backends
from .exceptions import NotQlessBackendError, TaskScheduleError
from .resolve import in_installed_app

if TYPE_CHECKING:
    from ..conf import QlessSettings
    from ..recurring.declarations import Declared
    from ..schedules import Schedule

#: The backend class a scheduled task must use (for messages).
BACKEND_PATH = f"{QlessBackend.__module__.rsplit('.', 1)[0]}.{QlessBackend.__name__}"


def task_path(value: object) -> str | None:
    """The module path of a `Task` object; None for anything else."""
    return value.module_path if isinstance(value, Task) else None


def find_task(path: str) -> Task[Any, Any] | None:
    """The task at a dotted path inside an installed app, whatever its backend; else None.

    Nothing outside installed apps is imported: the worker would not run it either.
    """
    module, _, name = path.rpartition(".")
    if not module or not name.isidentifier() or not in_installed_app(module):
        return None
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return found if isinstance(found, Task) and found.module_path == path else None


def qless_backend_of(task: Task[Any, Any]) -> QlessBackend:
    """The task's backend; `NotQlessBackendError` unless it is a `QlessBackend`."""
    try:
        backend = task_backends[task.backend]
    except ImproperlyConfigured as exc:
        raise TaskScheduleError(
            f"task {task.module_path!r} uses TASKS[{task.backend!r}], which cannot be loaded: "
            f"{exc}") from exc
    if not isinstance(backend, QlessBackend):
        kind = f"{type(backend).__module__}.{type(backend).__qualname__}"
        raise NotQlessBackendError(
            f"task {task.module_path!r} uses TASKS[{task.backend!r}], a {kind}, not "
            f"{BACKEND_PATH}: only tasks of a QlessBackend can be scheduled (qless workers "
            "run them); give the task backend= an alias configured with QlessBackend")
    return backend


def resolve_task_schedule(
    task: Task[Any, Any], schedule: Schedule, settings: QlessSettings, where: str
) -> Declared:
    """The template for `schedule` of a task: the job its backend would enqueue."""
    from ..recurring.declarations import DEFAULT_RETRIES, Declared  # noqa: PLC0415 - cycle

    backend = qless_backend_of(task)
    name = validation.label(schedule.name or task.module_path, "schedule name")
    try:
        variant = task.using(queue_name=schedule.queue, priority=schedule.priority)  # type: ignore[arg-type]
        _check_call(variant, schedule)
        connection = backend.connection_for(variant.queue_name)
        if schedule.connection is not None and schedule.connection != connection:
            raise TaskScheduleError(
                f"CONNECTION is {schedule.connection!r}, but task {task.module_path!r} is put "
                f"on {connection!r} by its backend TASKS[{task.backend!r}] (where get_result "
                "reads it back): leave CONNECTION out")
        if connection not in settings.connections:
            raise TaskScheduleError(
                f"task {task.module_path!r} goes to connection {connection!r}, not in "
                f"QLESS['CONNECTIONS'] (configured: {', '.join(settings.connections)})")
        encoded = backend.job_data(get_client(connection), variant, schedule.args,
                                   schedule.kwargs)
    except InvalidTask as exc:
        raise TaskScheduleError(f"task {task.module_path!r}: {exc}") from exc
    options = backend.qless_options
    tags = options.tags if schedule.tags is None else tuple(schedule.tags)
    retries = schedule.retries if schedule.retries is not None else options.retries
    return Declared(
        name=name,
        jid=schedule_jid(name),
        klass=variant.module_path,
        queue=variant.queue_name,
        connection=connection,
        every=schedule.every,
        priority=float(variant.priority),
        tags=tuple(dict.fromkeys([*validation.labels(list(tags), "tag"), MANAGED_TAG])),
        retries=DEFAULT_RETRIES if retries is None else validation.integer(retries, "retries",
                                                                           minimum=0),
        backlog=schedule.backlog or 0,
        data=json.loads(encoded),
        encoded=encoded,
        source=where,
    )


def _check_call(task: Task[Any, Any], schedule: Schedule) -> None:
    """`TypeError` unless the task's function takes the schedule's arguments."""
    context = [None] if task.takes_context else []
    try:
        inspect.signature(task.func).bind(*context, *schedule.args, **schedule.kwargs)
    except TypeError as exc:
        raise TypeError(f"task {task.module_path!r}: {exc}") from exc
