"""A small installed app whose `qless_jobs` module the autodiscovery must find."""

from __future__ import annotations

from django.apps import AppConfig


class TestAppConfig(AppConfig):
    """`tests.testapp` in the test settings."""

    name = "tests.testapp"
    label = "testapp"
    default_auto_field = "django.db.models.BigAutoField"
