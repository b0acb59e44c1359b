"""`OutboxEntry`: a put waiting for its transaction's commit, or for the sweep."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils import timezone

from .fields import JSONListField


class OutboxEntry(models.Model):
    """One job to put into Redis: written in the enqueuing transaction, deleted once put."""

    #: The `QLESS` connection alias the job goes to.
    connection: models.CharField[str, str] = models.CharField(max_length=256)
    queue: models.CharField[str, str] = models.CharField(max_length=128)
    jid: models.CharField[str, str] = models.CharField(max_length=128, unique=True)
    klass: models.CharField[str, str] = models.CharField(max_length=256)
    #: The job data, already validated and encoded as JSON.
    data: models.TextField[str, str] = models.TextField()
    #: Epoch seconds before which the job must not run: a late put does not delay it again.
    not_before: models.FloatField[float, float] = models.FloatField()
    priority: models.FloatField[float | None, float | None] = models.FloatField(null=True)
    tags = JSONListField(default=list)
    retries: models.IntegerField[int | None, int | None] = models.IntegerField(null=True)
    depends = JSONListField(default=list)
    tracked: models.BooleanField[bool, bool] = models.BooleanField(default=False)
    #: The `put_if_absent` policy of a unique job ("" for a plain put).
    unique: models.CharField[str, str] = models.CharField(max_length=8, blank=True, default="")
    #: The Tasks backend alias of a Django task ("" for a `@qless_job`): says which signal
    #: announces the job once it is in Redis.
    task_backend: models.CharField[str, str] = models.CharField(
        max_length=128, blank=True, default=""
    )
    created: models.DateTimeField[datetime, datetime] = models.DateTimeField(
        default=timezone.now, db_index=True
    )

    class Meta:
        app_label = "django_qless"
        db_table = "django_qless_outbox"
        default_permissions = ()
        verbose_name = "outbox entry"
        verbose_name_plural = "outbox"

    def __str__(self) -> str:
        return f"{self.klass} {self.jid} -> {self.connection}/{self.queue}"
