"""The newsletter's Django Task, run by `qless_worker` beside the `@qless_job` functions.

Written against Django's own Tasks API (`django.tasks` on Django 6, the `django-tasks`
backport on Django 5.2); `TASKS` in the settings puts it on qless
(`django_qless.tasks.QlessBackend`), and its return value is read back with `get_result`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from .models import Delivery, Issue, Subscriber

if TYPE_CHECKING:
    from django_tasks import TaskContext, task
else:
    try:
        from django.tasks import TaskContext, task
    except ImportError:  # Django 5.2: the backport
        from django_tasks import TaskContext, task


@task(queue_name="issues", takes_context=True)
def weekly_digest(context: TaskContext, days: int = 7) -> dict[str, Any]:
    """Sum up the last `days` days for the editors; the summary is the task's result."""
    since = timezone.now() - timedelta(days=days)
    sent = Issue.objects.filter(status=Issue.Status.SENT, sent_at__gte=since)
    return {
        "days": days,
        "new_subscribers": Subscriber.objects.filter(joined_at__gte=since).count(),
        "issues_sent": sent.count(),
        "deliveries": Delivery.objects.filter(issue__in=sent).count(),
        "attempt": context.attempt,
    }
