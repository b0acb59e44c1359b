"""Settings every Tasks system shares; settings_<system>.py add the backend and its apps."""

from __future__ import annotations

import os

SECRET_KEY = "django_qless-bench-only"  # noqa: S105 - throwaway benchmark settings
DEBUG = False
USE_TZ = True
DATABASES: dict[str, dict[str, str]] = {}
#: The backport asks to be an installed app (Django 6 needs nothing).
BASE_APPS = ["django_tasks", "tasks_bench"]
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
QUEUES = ["bench"]
