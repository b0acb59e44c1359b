"""Why a popped Django task cannot run in this worker, in words an operator can act on.

A task's job data names the `TASKS` alias it was enqueued through; the worker runs it only
when its own settings configure that alias with django_qless' backend and the task can
be imported from an installed app (`tasks.worker.task_run`). Read from the settings
alone: nothing is imported for a job that is not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from ..core import Job
from ..exceptions import JobDataError

#: What `TASKS[alias]["BACKEND"]` should say.
BACKEND_PATH = "django_qless.tasks.QlessBackend"
#: The fix common to every settings problem.
SAME = ("The worker must run with the TASKS setting of the project that enqueues the task "
        "(check its DJANGO_SETTINGS_MODULE).")
#: The job data key of a task's marker (`tasks.payload.TASK_KEY`, which needs Tasks).
TASK_KEY = "task"


def task_alias(job: Job) -> str | None:
    """The `TASKS` alias a task's job was enqueued through; None for any other job."""
    try:
        data = job.data
    except JobDataError:
        return None
    marker = data.get(TASK_KEY)
    if not isinstance(marker, Mapping):
        return None
    alias = marker.get("backend")
    return alias if isinstance(alias, str) else repr(alias)


def task_advice(alias: str) -> str | None:
    """What is wrong in this worker's settings for a task of `alias`, and how to fix it;
    None when they are right (then the task itself was not found: `task_missing`)."""
    if not settings.is_overridden("TASKS"):
        return (f"this worker's settings have no TASKS, so no backend of django_qless: the "
                f"task was enqueued through TASKS alias {alias!r}; add TASKS = {{{alias!r}: "
                f"{{'BACKEND': {BACKEND_PATH!r}, ...}}}} to them. {SAME}")
    configured: Mapping[str, Any] = getattr(settings, "TASKS", None) or {}
    if alias not in configured:
        known = ", ".join(repr(name) for name in configured) or "none"
        return (f"this worker's TASKS has no alias {alias!r}, the one the task was enqueued "
                f"through (it has {known}); add {alias!r} with 'BACKEND': "
                f"{BACKEND_PATH!r}. {SAME}")
    backend = str((configured[alias] or {}).get("BACKEND", ""))
    try:
        from ..tasks.backend import QlessBackend  # noqa: PLC0415 - optional: needs Tasks
    except ImportError as exc:
        return (f"this worker cannot load django_qless' Tasks backend ({exc}); install "
                "Django 6.0+ or django-tasks where the worker runs.")
    if not _is_subclass(backend, QlessBackend):
        return (f"this worker's TASKS[{alias!r}] uses {backend or 'no BACKEND'}, not "
                f"{BACKEND_PATH}: only tasks of a django_qless backend run in "
                f"qless_worker. {SAME}")
    return None


def task_missing(klass: str) -> str:
    """Why a task of a well-configured alias was not found."""
    return (f"no task {klass!r} found: its module must be inside an installed app and "
            "define a @task of that name on a django_qless TASKS alias")


def _is_subclass(path: str, base: type) -> bool:
    """Whether a `BACKEND` path names `base` or a subclass of it."""
    try:
        backend = import_string(path)
    except ImportError:
        return False
    return isinstance(backend, type) and issubclass(backend, base)
