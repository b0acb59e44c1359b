"""Recurring jobs declared in code and reconciled with qless's templates in Redis.

Importing this package loads only the Django-free schedule types, so settings modules
can use `every(...)`; the sync machinery is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .schedule import DEFAULT_BACKLOG, JID_PREFIX, MANAGED_TAG, Every, Schedule, every, schedule_jid

if TYPE_CHECKING:
    from .sync import SyncReport, sync_schedules

__all__ = [
    "DEFAULT_BACKLOG",
    "JID_PREFIX",
    "MANAGED_TAG",
    "Every",
    "Schedule",
    "SyncReport",
    "every",
    "schedule_jid",
    "sync_schedules",
]


def __getattr__(name: str) -> Any:
    """Import the sync entry points lazily (they need Django settings)."""
    if name in ("sync_schedules", "SyncReport"):
        from . import sync  # noqa: PLC0415

        return getattr(sync, name)
    raise AttributeError(f"module 'django_qless.recurring' has no attribute {name!r}")
