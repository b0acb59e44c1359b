"""Django's Tasks API from `django.tasks` (Django 6.x) or the `django-tasks` backport (5.2).

Everything else in this package imports these names from here, so one module decides which
implementation backs the backend. Type checking uses the backport's annotated sources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django_tasks import TaskContext, TaskResult, TaskResultStatus, task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskError
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json
else:
    try:
        from django.tasks import Task, TaskContext, TaskResult, TaskResultStatus, task_backends
    except ImportError:
        try:
            from django_tasks import TaskContext, TaskResult, TaskResultStatus, task_backends
        except ImportError as exc:
            raise ImportError(
                "django_qless.tasks needs Django 6.0+ or the django-tasks package "
                "(python -m pip install django-tasks, or django_qless's [tasks] extra)"
            ) from exc
        from django_tasks.backends.base import BaseTaskBackend
        from django_tasks.base import Task, TaskError
        from django_tasks.exceptions import InvalidTaskError as InvalidTask
        from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
        from django_tasks.signals import task_enqueued, task_finished, task_started
        from django_tasks.utils import normalize_json
    else:
        from django.tasks.backends.base import BaseTaskBackend
        from django.tasks.base import TaskError
        from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist, TaskResultMismatch
        from django.tasks.signals import task_enqueued, task_finished, task_started
        from django.utils.json import normalize_json

__all__ = [
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "normalize_json",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
