"""System check: the outbox is on, so its table must exist (`manage.py migrate`).

Tagged `database`, as Django's own checks that query a database: run by
`manage.py check --database default` and by `migrate`.
"""

from __future__ import annotations

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
    if not databases:
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
