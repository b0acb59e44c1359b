"""`tests.workerapp`: jobs for the worker tests (found by autodiscovery)."""

from __future__ import annotations

from django.apps import AppConfig


class WorkerAppConfig(AppConfig):
    """`tests.workerapp` in the test settings."""

    name = "tests.workerapp"
    label = "workerapp"
    default_auto_field = "django.db.models.BigAutoField"
