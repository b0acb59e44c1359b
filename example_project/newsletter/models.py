"""Subscribers, newsletter issues, deliveries and subscriber exports."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Subscriber(models.Model):
    """Someone who signed up for the newsletter."""

    email = models.EmailField(unique=True)
    name = models.CharField(max_length=100, blank=True)
    source = models.CharField(max_length=50, default="signup-form")
    joined_at = models.DateTimeField(default=timezone.now)
    welcomed_at = models.DateTimeField(null=True, blank=True)
    welcome_attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["email"]

    def __str__(self) -> str:
        return self.email


class Issue(models.Model):
    """One newsletter issue, rendered once and sent to every subscriber in batches."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SCHEDULED = "scheduled", "Scheduled"
        RENDERED = "rendered", "Rendered"
        SENT = "sent", "Sent"
        ARCHIVED = "archived", "Archived"

    subject = models.CharField(max_length=200)
    body = models.TextField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT)
    send_at = models.DateTimeField(null=True, blank=True)
    rendered_html = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.subject


class Delivery(models.Model):
    """One issue handed to the mail relay for one subscriber."""

    class Status(models.TextChoices):
        SENT = "sent", "Sent"
        BOUNCED = "bounced", "Bounced"

    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="deliveries")
    subscriber = models.ForeignKey(Subscriber, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=20, choices=Status.choices)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issue", "subscriber"], name="one_delivery_per_issue"),
        ]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.issue} -> {self.subscriber} ({self.status})"


class Export(models.Model):
    """A CSV export of the subscriber list, built by a long-running job."""

    requested_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    rows = models.PositiveIntegerField(default=0)
    csv = models.TextField(blank=True)

    class Meta:
        ordering = ["-requested_at"]

    def __str__(self) -> str:
        state = f"{self.rows} rows" if self.finished_at else "in progress"
        return f"Export #{self.pk} ({state})"
