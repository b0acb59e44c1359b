"""The newsletter's qless jobs; django_qless imports this module in every process.

- `send_welcome_email`: retried with exponential backoff when the relay is busy.
- `render_issue` -> `send_issue_batch` x N -> `finish_issue`: a pipeline held together by
  `depends` (see `pipeline.py`); `finish_issue` is tracked.
- `export_subscribers`: a long job that logs its progress into its qless history while the
  worker keeps its lease alive with heartbeats.
- `import_partner_feed`: one of the feeds is malformed, so the failed page has content.
- `purge_old_exports`: recurring maintenance, written to Redis by `manage.py qless_recur`.
- `archive_issue`: queued in the `archive` queue, which the demo pauses.
"""

from __future__ import annotations

import csv
import io
import logging
import time
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import TypeVar

from django.utils import timezone

from django_qless import every, qless_job
from django_qless.core import Job
from django_qless.retry import RetryPolicy

from . import mail
from .feeds import parse_feed
from .models import Delivery, Export, Issue, Subscriber

logger = logging.getLogger("newsletter.jobs")

T = TypeVar("T")

#: Busy relays are retried after about 2 s, 4 s, 8 s (jitter +/-10%); bounces are not.
MAIL_RETRY = RetryPolicy(backoff=2, factor=2, max_delay=60, jitter=0.1,
                         retry_on=(mail.MailServerBusyError,))
#: How long an export is kept before `purge_old_exports` deletes it.
EXPORT_RETENTION = timedelta(days=7)


@qless_job(queue="emails", retries=3, retry_policy=MAIL_RETRY, tags=["welcome"])
def send_welcome_email(subscriber_id: int) -> None:
    """Greet a new subscriber (idempotent: a subscriber is welcomed once)."""
    subscriber = Subscriber.objects.get(pk=subscriber_id)
    if subscriber.welcomed_at is not None:
        return
    subscriber.welcome_attempts += 1
    subscriber.save(update_fields=["welcome_attempts"])
    mail.deliver(subscriber.email, "Welcome aboard!", attempt=subscriber.welcome_attempts)
    subscriber.welcomed_at = timezone.now()
    subscriber.save(update_fields=["welcomed_at"])


@qless_job(queue="issues", tags=["issue"])
def render_issue(issue_id: int) -> None:
    """Turn the issue's plain-text body into the HTML every batch sends."""
    issue = Issue.objects.get(pk=issue_id)
    paragraphs = (p.strip() for p in issue.body.split("\n\n"))
    issue.rendered_html = "\n".join(f"<p>{p}</p>" for p in paragraphs if p)
    issue.status = Issue.Status.RENDERED
    issue.save(update_fields=["rendered_html", "status"])


@qless_job(queue="emails", retries=3, retry_policy=MAIL_RETRY, takes_job=True,
           tags=["issue"])
def send_issue_batch(job: Job, issue_id: int, subscriber_ids: list[int]) -> int:
    """Mail the issue to some subscribers; a retried batch skips those already done."""
    issue = Issue.objects.get(pk=issue_id)
    attempt = job.retries - job.remaining + 1
    done = set(issue.deliveries.values_list("subscriber_id", flat=True))
    sent = 0
    for subscriber in Subscriber.objects.filter(pk__in=subscriber_ids).exclude(pk__in=done):
        try:
            mail.deliver(subscriber.email, issue.subject, attempt=attempt)
        except mail.MailboxNotFoundError:
            # One dead address must not hold up a bulk send: note it and go on.
            Delivery.objects.create(issue=issue, subscriber=subscriber,
                                    status=Delivery.Status.BOUNCED)
            continue
        Delivery.objects.create(issue=issue, subscriber=subscriber, status=Delivery.Status.SENT)
        sent += 1
    return sent


@qless_job(queue="issues", tracked=True, tags=["issue"])
def finish_issue(issue_id: int) -> None:
    """Mark the issue sent once every batch is done (it depends on all of them)."""
    issue = Issue.objects.get(pk=issue_id)
    issue.status = Issue.Status.SENT
    issue.sent_at = timezone.now()
    issue.save(update_fields=["status", "sent_at"])
    logger.info("issue %r sent: %d deliveries", issue.subject, issue.deliveries.count())


@qless_job(queue="exports", takes_job=True, heartbeat=5, tracked=True, tags=["export"])
def export_subscribers(job: Job, export_id: int, seconds_per_batch: float = 5.0,
                       batch_size: int = 5) -> int:
    """Write the subscriber list as CSV, slowly, logging progress to the job's history."""
    export = Export.objects.get(pk=export_id)
    subscribers = list(Subscriber.objects.order_by("pk"))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["email", "name", "source", "joined_at"])
    for done, batch in enumerate(batched(subscribers, batch_size), start=1):
        for s in batch:
            writer.writerow([s.email, s.name, s.source, s.joined_at.isoformat()])
        # Stands in for a slow query or upload; the worker renews the lease meanwhile.
        time.sleep(seconds_per_batch)
        rows = min(done * batch_size, len(subscribers))
        job.log("progress", {"rows": rows, "of": len(subscribers)})
    export.csv = out.getvalue()
    export.rows = len(subscribers)
    export.finished_at = timezone.now()
    export.save(update_fields=["csv", "rows", "finished_at"])
    return export.rows


@qless_job(queue="imports", retries=0, tags=["import"])
def import_partner_feed(feed: str) -> int:
    """Add the subscribers listed in a partner's CSV feed; a malformed feed fails the job."""
    created = 0
    for email, name in parse_feed(feed):
        _, new = Subscriber.objects.get_or_create(
            email=email, defaults={"name": name, "source": f"feed:{feed}"}
        )
        if new:
            created += 1
    return created


@qless_job(queue="maintenance", recur=every(hours=1))
def purge_old_exports() -> int:
    """Delete exports older than the retention period, on the hour (`manage.py qless_recur`)."""
    deleted, _ = Export.objects.filter(
        requested_at__lt=timezone.now() - EXPORT_RETENTION
    ).delete()
    return deleted


@qless_job(queue="archive", tags=["issue"])
def archive_issue(issue_id: int) -> None:
    """Move a sent issue to the archive."""
    Issue.objects.filter(pk=issue_id).update(status=Issue.Status.ARCHIVED)


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most `size` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
