"""`tests.faults.app`: installed only in the worker subprocesses' settings."""

from __future__ import annotations

from django.apps import AppConfig


class FaultsAppConfig(AppConfig):
    """The fault suite's jobs (found by the worker's autodiscovery)."""

    name = "tests.faults.app"
    label = "faultsapp"
    default_auto_field = "django.db.models.BigAutoField"
