"""django-tasks-db: tasks are rows in SQLite, run by `db_worker`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tasks_bench.settings import BASE_APPS, DEBUG, QUEUES, SECRET_KEY, USE_TZ

__all__ = ["DATABASES", "DEBUG", "INSTALLED_APPS", "SECRET_KEY", "TASKS", "USE_TZ"]

INSTALLED_APPS = ["django_tasks_db", *BASE_APPS]
#: The bench points $BENCH_SQLITE into its log directory and recreates the file per scenario.
SQLITE = os.environ.get("BENCH_SQLITE", str(Path(tempfile.gettempdir()) / "tasks_db.sqlite3"))
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": SQLITE}}
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": QUEUES}}
