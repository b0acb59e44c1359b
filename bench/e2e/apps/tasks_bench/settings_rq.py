"""django-tasks-rq: tasks are RQ jobs in Redis, run by django-rq's `rqworker`."""

from __future__ import annotations

from tasks_bench.settings import BASE_APPS, DATABASES, DEBUG, QUEUES, REDIS_URL, SECRET_KEY, USE_TZ

__all__ = ["DATABASES", "DEBUG", "INSTALLED_APPS", "RQ_QUEUES", "SECRET_KEY", "TASKS", "USE_TZ"]

INSTALLED_APPS = ["django_rq", "django_tasks_rq", *BASE_APPS]
RQ_QUEUES = {name: {"URL": REDIS_URL} for name in QUEUES}
TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": QUEUES}}
