"""Enqueue an issue's pipeline: render, then send in batches, then finish.

The batches depend on the render job and the finish job on every batch, so qless holds
them in the `depends` state and releases each one when what it waits for completes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .models import Issue, Subscriber
from .qless_jobs import finish_issue, render_issue, send_issue_batch

BATCH_SIZE = 10


@dataclass(frozen=True)
class IssueJobs:
    """The jids of one issue's pipeline."""

    render: str
    batches: tuple[str, ...]
    finish: str

    def all(self) -> list[str]:
        """Every jid, in pipeline order."""
        return [self.render, *self.batches, self.finish]


def send_issue(issue: Issue, *, delay: float = 0) -> IssueJobs:
    """Enqueue the pipeline for `issue`; with a delay, rendering starts that much later."""
    # Before the puts: a fast worker may render the issue before this function returns.
    issue.status = Issue.Status.SCHEDULED
    issue.save(update_fields=["status"])
    tag = f"issue:{issue.pk}"
    render = render_issue.using(delay=delay, tags=["issue", tag]).enqueue(issue.pk)
    subscriber_ids = list(Subscriber.objects.order_by("pk").values_list("pk", flat=True))
    batches = tuple(
        send_issue_batch.using(depends=[render], tags=["issue", tag]).enqueue(
            issue.pk, subscriber_ids[start : start + BATCH_SIZE]
        )
        for start in range(0, len(subscriber_ids), BATCH_SIZE)
    )
    finish = finish_issue.using(depends=[render, *batches], tags=["issue", tag]).enqueue(
        issue.pk
    )
    return IssueJobs(render=render, batches=batches, finish=finish)
