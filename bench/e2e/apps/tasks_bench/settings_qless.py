"""django_qless's Tasks backend: tasks are qless jobs, run by `qless_worker`."""

from __future__ import annotations

from tasks_bench.settings import BASE_APPS, DATABASES, DEBUG, QUEUES, REDIS_URL, SECRET_KEY, USE_TZ

__all__ = ["DATABASES", "DEBUG", "INSTALLED_APPS", "QLESS", "SECRET_KEY", "TASKS", "USE_TZ"]

INSTALLED_APPS = ["django_qless", *BASE_APPS]
QLESS = {"URL": REDIS_URL}
TASKS = {"default": {"BACKEND": "django_qless.tasks.QlessBackend", "QUEUES": QUEUES}}
