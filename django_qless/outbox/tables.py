"""Which databases hold an outbox table, and whether it was migrated there."""

from __future__ import annotations

import functools
import logging

from django.db import DatabaseError, connections, router

from .models import OutboxEntry

logger = logging.getLogger("django_qless.outbox")


#: The engine Django gives a project with no database (`DATABASES = {}`): nothing to sweep.
NO_DATABASE = "django.db.backends.dummy"


def outbox_databases() -> list[str]:
    """The database aliases the outbox model may be migrated to (the routers decide)."""
    return [alias for alias in connections
            if connections.settings[alias].get("ENGINE") != NO_DATABASE
            and router.allow_migrate_model(alias, OutboxEntry)]


def migrated(alias: str) -> bool:
    """Whether the outbox table exists in one database (`manage.py migrate` creates it)."""
    connection = connections[alias]
    try:
        with connection.cursor() as cursor:
            names = connection.introspection.table_names(cursor)
    except DatabaseError:
        return False
    return OutboxEntry._meta.db_table in names


@functools.cache
def ready(alias: str) -> bool:
    """`migrated`, asked once per process: enqueues skip the outbox of an unmigrated
    database (as with `QLESS['OUTBOX'] = False`) instead of failing."""
    if migrated(alias):
        return True
    logger.warning("qless outbox: no table %s in database %r (run manage.py migrate); "
                   "on-commit enqueues are put at commit without it",
                   OutboxEntry._meta.db_table, alias)
    return False
