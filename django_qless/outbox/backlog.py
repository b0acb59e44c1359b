"""The outbox backlog, for metrics and the operator: rows waiting and the oldest's age."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Min
from django.utils import timezone

from .models import OutboxEntry


@dataclass(frozen=True)
class Backlog:
    """Rows of one database's outbox not put yet, and how long the oldest has waited."""

    database: str
    rows: int
    oldest_age: float | None  # seconds; None when the outbox is empty


def backlog(using: str = "default") -> Backlog:
    """The backlog of one database's outbox (two aggregates in one query)."""
    found = OutboxEntry.objects.using(using).aggregate(rows=Count("pk"), oldest=Min("created"))
    oldest = found["oldest"]
    age = None if oldest is None else max(0.0, (timezone.now() - oldest).total_seconds())
    return Backlog(using, found["rows"], age)
