"""An installed app whose jobs declare recurring schedules (for the qless_recur tests)."""

from __future__ import annotations

from django.apps import AppConfig


class RecurAppConfig(AppConfig):
    """`tests.recurapp` in the test settings."""

    name = "tests.recurapp"
    label = "recurapp"
    default_auto_field = "django.db.models.BigAutoField"
