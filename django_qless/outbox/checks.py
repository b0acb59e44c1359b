"""System check: the outbox is on, so its table must exist (`manage.py migrate`).

Tagged `database`, as Django's own checks that query a database: run by
`manage.py check --database default`. `migrate` runs the database checks too, before it
migrates: there the warning would ask for the very command being run, so it is left out.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from ..conf import get_settings
from .models import OutboxEntry
from .tables import migrated, outbox_databases


@checks.register(checks.Tags.database)
def check_outbox_table(
    app_configs: Sequence[Any] | None = None, databases: Iterable[str] | None = None,
    **kwargs: Any,
) -> list[checks.CheckMessage]:
    """A warning per database the outbox belongs in but whose table is missing."""
    if not databases or _checking_for_migrate():
        return []
    try:
        if not get_settings().outbox.enabled:
            return []
    except ImproperlyConfigured:
        return []  # a broken QLESS setting is reported by django_qless's own checks
    wanted = set(outbox_databases())
    return [
        checks.Warning(
            f"the outbox table {OutboxEntry._meta.db_table} does not exist in database "
            f"{alias!r}: on-commit enqueues skip the outbox (a put failing at commit "
            "loses its job)",
            hint="run manage.py migrate (django_qless 0002_outbox), or set "
                 "QLESS['OUTBOX'] = False",
            obj="settings.QLESS", id="django_qless.W010",
        )
        for alias in databases if alias in wanted and not migrated(alias)
    ]


def _checking_for_migrate() -> bool:
    """Whether the checks run inside `migrate` (any subclass), which creates the table."""
    # Imported here: the migration machinery is not needed by every process that checks.
    from django.core.management.commands.migrate import Command as MigrateCommand  # noqa: PLC0415

    # Django gives a check no word of the command that runs it: find the command's frame.
    frame = inspect.currentframe()
    while frame is not None:
        if isinstance(frame.f_locals.get("self"), MigrateCommand):
            return True
        frame = frame.f_back
    return False
