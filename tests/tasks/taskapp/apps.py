"""App config of the Tasks test app."""

from __future__ import annotations

from django.apps import AppConfig


class TaskAppConfig(AppConfig):
    """`tests.tasks.taskapp`, added to INSTALLED_APPS by tests/tasks/conftest.py."""

    name = "tests.tasks.taskapp"
    label = "tasks_taskapp"
