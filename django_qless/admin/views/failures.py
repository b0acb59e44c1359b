"""Failure groups: the list, one group's jobs, and retry/cancel of a whole group."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.http import HttpResponse

from ...audit_log.models import Kind
from ...core import Job
from .. import audit, bulk, bulk_all, presenters
from ..feedback import confirm_page, confirmed, invalid, plural, report
from ..forms import GroupForm
from ..page_context import PageContext
from ..pagination import paginate, paginate_sequence
from .jobs import list_context


@dataclass(frozen=True)
class GroupSummary:
    """A failure group with its size, newest and oldest failure."""

    name: str
    count: int
    newest: Job | None
    oldest: Job | None
    #: First line of the newest failure's message, masked ("" for a user who may not see it).
    sample: str = ""

    @property
    def last_seen(self) -> datetime | None:
        """When the newest failure happened."""
        return _failed_at(self.newest)

    @property
    def first_seen(self) -> datetime | None:
        """When the oldest failure still in the group happened."""
        return _failed_at(self.oldest)


def _failed_at(job: Job | None) -> datetime | None:
    """When a job failed."""
    return presenters.when(job.failure.when) if job and job.failure else None


def summarize(ctx: PageContext, group: str, count: int) -> GroupSummary:
    """A group's newest and oldest job (two one-item queries)."""
    newest = ctx.client.get_jobs(ctx.client.failed_jids(group, 0, 1)[1])
    oldest = ctx.client.get_jobs(ctx.client.failed_jids(group, max(count - 1, 0), 1)[1])
    failure = newest[0].failure if newest else None
    sample = presenters.first_line(ctx.redaction().text(failure.message)) if failure else ""
    return GroupSummary(
        group, count, newest[0] if newest else None, oldest[0] if oldest else None, sample
    )


def groups(ctx: PageContext) -> HttpResponse:
    """Every failure group, largest first, with first/last seen and a sample message."""
    ordered = sorted(ctx.client.failed().items(), key=lambda item: (-item[1], item[0]))
    page = paginate_sequence(ctx.request, ordered).map(
        lambda items: [summarize(ctx, name, count) for name, count in items]
    )
    context = {"page": page, "failed_total": sum(count for _, count in ordered)}
    return ctx.render("failures.html", context, title="Failed jobs", section="failures")


def group_page(ctx: PageContext, group: str) -> HttpResponse:
    """One failure group's jobs, newest first."""
    total = ctx.client.failed().get(group, 0)

    def fetch(offset: int, count: int) -> list[str]:
        return ctx.client.failed_jids(group, offset, count)[1]

    context: dict[str, Any] = {
        **list_context(ctx, paginate(ctx.request, fetch, total)), "group": group, "total": total,
        "select_all": bulk_all.offer({"state": "failed", "group": group}, total),
    }
    crumbs = [("Failed jobs", ctx.url("failures")), (group, None)]
    return ctx.render(
        "failure_group.html", context, title=f"Failure group {group}", section="failures",
        crumbs=crumbs,
    )


def retry_group(ctx: PageContext) -> HttpResponse:
    """Requeue every job of a group into its own queue."""
    form = GroupForm(ctx.request.POST)
    if not form.is_valid():
        return invalid(ctx, form, ctx.url("failures"))
    group = form.cleaned_data["group"]
    before = ctx.client.failed().get(group, 0)
    outcome = bulk.retry_group(ctx.client, group)
    message = f"Retried {plural(outcome.done, 'job')} of failure group {group}"
    if outcome.done:
        audit.record(ctx, [group_change(
            ctx, "group_retry", group, f"{message} in {outcome.batches} batches", before
        )])
    report(ctx, f"{message}." if outcome.done else None, outcome.errors)
    return ctx.redirect_back(ctx.url("failures"))


def retry_all(ctx: PageContext) -> HttpResponse:
    """Requeue the jobs of every failure group (up to the bulk limit per request), after a
    confirmation page stating how many."""
    failed = ctx.client.failed()
    if failed and not confirmed(ctx):
        return confirm_page(
            ctx, title="Retry every failed job", fallback=ctx.url("failures"),
            question=retry_all_question(sum(failed.values()), len(failed)),
        )
    total = bulk.Outcome()
    for group in failed:
        if total.done >= bulk.MAX_JOBS:
            break
        outcome = bulk.retry_group(ctx.client, group)
        total.done += outcome.done
        total.batches += outcome.batches
        total.errors += outcome.errors
    message = f"Retried {plural(total.done, 'failed job')}"
    if total.done:
        audit.record(ctx, [audit.Change(
            "retry_all", Kind.FAILURE_GROUP, "*", f"{message} of every group",
            before={"failed jobs": sum(failed.values())},
            after={"failed jobs": sum(ctx.client.failed().values())},
        )])
    report(ctx, f"{message}." if total.done else "No failed jobs to retry.", total.errors)
    return ctx.redirect_back(ctx.url("failures"))


def retry_all_question(count: int, groups: int) -> str:
    """What the confirmation of a retry of every failed job asks."""
    question = f"Retry all {plural(count, 'failed job')} of {plural(groups, 'failure group')}?"
    if count > bulk.MAX_JOBS:
        question += f" The first {bulk.MAX_JOBS:,} are retried now; retry again for the rest."
    return question


def cancel_group(ctx: PageContext) -> HttpResponse:
    """Cancel every job of a group, after a confirmation page."""
    form = GroupForm(ctx.request.POST)
    if not form.is_valid():
        return invalid(ctx, form, ctx.url("failures"))
    group = form.cleaned_data["group"]
    if not confirmed(ctx):
        count = ctx.client.failed().get(group, 0)
        return confirm_page(
            ctx, title="Cancel a failure group", fallback=ctx.url("failures"),
            question=f"Cancel all {plural(count, 'job')} of failure group {group}?",
        )
    before = ctx.client.failed().get(group, 0)
    outcome = bulk.cancel_group(ctx.client, group)
    message = f"Cancelled {plural(outcome.done, 'job')} of failure group {group}"
    if outcome.done:
        audit.record(ctx, [group_change(
            ctx, "group_cancel", group, f"{message} in {outcome.batches} batches", before
        )], deletion=True)
    report(ctx, f"{message}." if outcome.done else None, outcome.errors)
    return ctx.redirect_back(ctx.url("failures"))


def group_change(
    ctx: PageContext, action: str, group: str, message: str, before: int
) -> audit.Change:
    """The audit entry of a whole group's retry or cancel: its size before and after."""
    return audit.Change(
        action, Kind.FAILURE_GROUP, group, message, before={"failed jobs": before},
        after={"failed jobs": ctx.client.failed().get(group, 0)},
    )
