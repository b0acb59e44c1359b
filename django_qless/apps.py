"""The Django app: registers checks and logging receivers, and finds every job module."""

from __future__ import annotations

from django.apps import AppConfig


class DjangoQlessConfig(AppConfig):
    """`django_qless` in INSTALLED_APPS."""

    name = "django_qless"
    label = "django_qless"
    verbose_name = "Qless"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Import checks and receivers, then every installed app's `qless_jobs` module."""
        from .management.early_signals import install_for_worker_command  # noqa: PLC0415

        # In a worker, first: a stop signal while the job modules load ends it cleanly.
        install_for_worker_command()
        from . import checks, signal_handlers  # noqa: F401, PLC0415 - imported to register
        from .conf import get_settings  # noqa: PLC0415
        from .core import hooks  # noqa: PLC0415

        # Read at every use: `override_settings` of QLESS["HOOKS"] takes effect at once.
        hooks.declare(lambda: get_settings().hooks)
        from .outbox import checks as outbox_checks  # noqa: F401, PLC0415 - registers it
        from .registry import autodiscover  # noqa: PLC0415 - needs the app registry ready

        autodiscover()
