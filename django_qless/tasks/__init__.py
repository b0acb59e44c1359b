"""Django's Tasks framework (`django.tasks`, or the `django-tasks` backport) on qless.

Configure ``TASKS = {"default": {"BACKEND": "django_qless.tasks.QlessBackend",
"QUEUES": [...], "OPTIONS": {...}}}``; see `options` for the OPTIONS keys and `payload`
for the job data a task is stored as.
"""

from .backend import QlessBackend
from .bulk import enqueue_many
from .errors import ERROR_EVENT, errors_of, exception_path, record_error
from .exceptions import ResultNotStorableError, TaskArgumentsError, TaskDataError
from .options import DEFAULT_RESULT_MAX_BYTES, BackendOptions
from .payload import encode_result, is_task_data, read_result, with_result
from .resolve import resolve_task, run_task
from .results import STATUS_BY_STATE, build_result

__all__ = [
    "DEFAULT_RESULT_MAX_BYTES",
    "ERROR_EVENT",
    "STATUS_BY_STATE",
    "BackendOptions",
    "QlessBackend",
    "ResultNotStorableError",
    "TaskArgumentsError",
    "TaskDataError",
    "build_result",
    "enqueue_many",
    "encode_result",
    "errors_of",
    "exception_path",
    "is_task_data",
    "read_result",
    "record_error",
    "resolve_task",
    "run_task",
    "with_result",
]
