"""Recurring jobs declared in code and reconciled with qless's templates in Redis.

The schedule types live in `django_qless.schedules` and are re-exported here, so settings
modules may keep `from django_qless.recurring import every`: importing this package reads
no Django setting and loads no app.
"""

from __future__ import annotations

from ..schedules import (
    DEFAULT_BACKLOG,
    JID_PREFIX,
    MANAGED_TAG,
    Cron,
    Every,
    Schedule,
    cron,
    every,
    schedule_jid,
)
from .sync import SyncReport, sync_schedules

__all__ = [
    "DEFAULT_BACKLOG",
    "JID_PREFIX",
    "MANAGED_TAG",
    "Cron",
    "Every",
    "Schedule",
    "SyncReport",
    "cron",
    "every",
    "schedule_jid",
    "sync_schedules",
]
