"""Placeholder models: no tables, they give the admin its "Qless" section and permissions.

Every page of the admin is served by the ModelAdmin of one of these models; the data
itself lives in Redis. `managed = False` keeps the migration from creating tables, and
the permissions are declared on `Overview` (the app's permission set is app-wide).
The real tables are the outbox of on-commit puts (`outbox.models.OutboxEntry`) and the
audit log of the admin's actions (`audit_log.models.AuditEntry`).
"""

from __future__ import annotations

from django.db import models

# Imported so Django registers the models with the app (it looks for models here).
from .audit_log.models import AuditEntry as AuditEntry  # noqa: F401 - the audit section
from .outbox.models import OutboxEntry  # noqa: F401

#: (codename, name) of every permission the admin pages check.
PERMISSIONS = [
    ("view_qless", "Can view the qless pages"),
    ("view_job_data", "Can see job data"),
    ("retry_jobs", "Can retry and time out jobs"),
    ("cancel_jobs", "Can cancel jobs"),
    ("edit_jobs", "Can move jobs and change their priority, tags, tracking and dependencies"),
    ("manage_queues",
     "Can pause queues, change queue settings, and pause, resume, stop or forget workers"),
    ("manage_recurring", "Can edit and delete recurring jobs"),
    ("manage_config", "Can change the qless config"),
    ("view_audit", "Can view the qless audit log"),
]


class Placeholder(models.Model):
    """Base of the placeholder models (never instantiated from a table)."""

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return str(self._meta.verbose_name)


class Overview(Placeholder):
    """The qless overview page; also carries every qless permission."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = PERMISSIONS
        verbose_name = "overview"
        verbose_name_plural = "overview"


class Queue(Placeholder):
    """Queues, their jobs by state and their settings."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "queue"
        verbose_name_plural = "queues"


class Job(Placeholder):
    """Job pages: search, job detail, completed and tracked jobs, jobs by tag."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "job"
        verbose_name_plural = "jobs"


class Failure(Placeholder):
    """Failed jobs, by failure group."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "failure group"
        verbose_name_plural = "failed jobs"


class Worker(Placeholder):
    """Workers and the jobs they hold."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "worker"
        verbose_name_plural = "workers"


class RecurringJob(Placeholder):
    """Recurring job templates."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "recurring job"
        verbose_name_plural = "recurring jobs"


class Config(Placeholder):
    """The qless configuration (the settings every qless client shares)."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "config"
        verbose_name_plural = "config"
