"""Admin for the newsletter: actions that enqueue qless jobs from the changelist."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from .models import Delivery, Export, Issue, Subscriber
from .pipeline import send_issue
from .qless_jobs import export_subscribers, send_welcome_email

if TYPE_CHECKING:
    # The admin classes are generic for type checkers only (no runtime subscripting).
    SubscriberBase = admin.ModelAdmin[Subscriber]
    IssueBase = admin.ModelAdmin[Issue]
    ExportBase = admin.ModelAdmin[Export]
    DeliveryInlineBase = admin.TabularInline[Delivery, Issue]
else:
    SubscriberBase = IssueBase = ExportBase = admin.ModelAdmin
    DeliveryInlineBase = admin.TabularInline


@admin.register(Subscriber)
class SubscriberAdmin(SubscriberBase):
    list_display = ["email", "name", "source", "joined_at", "welcomed_at", "welcome_attempts",
                    "qless_jobs"]
    list_filter = ["source"]
    search_fields = ["email", "name"]
    actions = ["welcome_again"]

    @admin.display(description="jobs")
    def qless_jobs(self, subscriber: Subscriber) -> SafeString:
        """A link to the subscriber's welcome jobs (tagged `subscriber:<pk>` by the seed)."""
        return tagged_link(f"subscriber:{subscriber.pk}")

    @admin.action(description="Send the welcome email (if not welcomed yet)")
    def welcome_again(self, request: HttpRequest, queryset: QuerySet[Subscriber]) -> None:
        """Enqueue one welcome job per selected subscriber."""
        for subscriber in queryset:
            send_welcome_email.using(
                tags=["welcome", f"subscriber:{subscriber.pk}"]
            ).enqueue(subscriber.pk)
        self.message_user(request, f"Enqueued {queryset.count()} welcome emails.",
                          messages.SUCCESS)


class DeliveryInline(DeliveryInlineBase):
    model = Delivery
    extra = 0
    readonly_fields = ["subscriber", "status", "at"]


@admin.register(Issue)
class IssueAdmin(IssueBase):
    list_display = ["subject", "status", "send_at", "sent_at", "created_at", "qless_jobs"]
    list_filter = ["status"]
    inlines = [DeliveryInline]
    actions = ["send_now"]

    @admin.display(description="jobs")
    def qless_jobs(self, issue: Issue) -> SafeString:
        """A link to the issue's pipeline jobs: every one carries the tag `issue:<pk>`."""
        return tagged_link(f"issue:{issue.pk}")

    @admin.action(description="Send now (render, batches, finish)")
    def send_now(self, request: HttpRequest, queryset: QuerySet[Issue]) -> None:
        """Enqueue the pipeline of each selected issue."""
        for issue in queryset:
            jobs = send_issue(issue)
            self.message_user(
                request, f"{issue}: enqueued {len(jobs.all())} jobs (finish job {jobs.finish}).",
                messages.SUCCESS,
            )


@admin.register(Export)
class ExportAdmin(ExportBase):
    list_display = ["__str__", "requested_at", "finished_at", "rows"]
    readonly_fields = ["requested_at", "finished_at", "rows", "csv"]
    actions = ["export_again"]

    @admin.action(description="Run a new export")
    def export_again(self, request: HttpRequest, queryset: QuerySet[Export]) -> None:
        """Start one new export (the selection only triggers the action)."""
        export = Export.objects.create()
        jid = export_subscribers.enqueue(export.pk)
        self.message_user(request, f"Export #{export.pk} enqueued as job {jid}.",
                          messages.SUCCESS)


def tagged_link(tag: str) -> SafeString:
    """A link to django_qless's admin page listing the jobs that carry `tag`."""
    url = reverse("admin:django_qless_tagged", kwargs={"alias": "default"})
    return format_html('<a href="{}?tag={}">jobs</a>', url, tag)
