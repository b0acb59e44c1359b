"""`AuditEntry`: who changed which job, queue or worker from the admin, when, and how."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models
from django.utils import timezone

from .fields import JSONDictField

#: Longest target id kept whole (an indexed column must stay within every database's
#: index key limit); a longer name is cut and its entry has no link.
TARGET_CHARS = 255


class Kind(models.TextChoices):
    """What an audited action was done to."""

    JOB = "job", "job"
    TAG = "tag", "jobs with a tag"
    QUEUE = "queue", "queue"
    WORKER = "worker", "worker"
    FAILURE_GROUP = "failure group", "failure group"
    RECURRING = "recurring", "recurring job"
    CRON = "cron", "cron schedule"
    CONFIG = "config", "config key"


class AuditEntry(models.Model):
    """One change made from the admin pages, with the values it changed, before and after."""

    time: models.DateTimeField[datetime, datetime] = models.DateTimeField(default=timezone.now)
    #: The username when it acted (kept when the user is renamed or deleted).
    actor: models.CharField[str, str] = models.CharField(max_length=150)
    #: The `QLESS` connection alias it acted on.
    connection: models.CharField[str, str] = models.CharField(max_length=256)
    #: What was done: one of `django_qless.admin.audit.ACTIONS` ("retry", "priority", ...).
    action: models.CharField[str, str] = models.CharField(max_length=32)
    kind: models.CharField[str, str] = models.CharField(max_length=16, choices=Kind.choices)
    #: The jid, queue, worker, group, tag, schedule or config key.
    target: models.CharField[str, str] = models.CharField(max_length=TARGET_CHARS)
    #: The readable sentence, as the admin log ("Recent actions") has it.
    message: models.TextField[str, str] = models.TextField()
    before: Any = JSONDictField(default=dict)
    after: Any = JSONDictField(default=dict)

    class Meta:
        app_label = "django_qless"
        db_table = "django_qless_audit"
        default_permissions = ()
        ordering = ("-time", "-id")
        verbose_name = "audit entry"
        verbose_name_plural = "audit log"
        # The page always filters on the connection, and on at most one more column with
        # the newest-first order: a page is read from one index, whatever the number of rows.
        indexes = (
            models.Index(fields=["connection", "time", "id"], name="qless_audit_time"),
            models.Index(fields=["connection", "actor", "time"], name="qless_audit_actor"),
            models.Index(fields=["connection", "action", "time"], name="qless_audit_action"),
            models.Index(fields=["connection", "kind", "time"], name="qless_audit_kind"),
            models.Index(fields=["connection", "target", "time"], name="qless_audit_target"),
        )

    def __str__(self) -> str:
        return f"{self.time:%Y-%m-%d %H:%M:%S} {self.actor}: {self.message}"
