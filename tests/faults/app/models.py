"""The fault suite's one table: rows its jobs write through Django's ORM."""

from __future__ import annotations

from django.db import models


class Touch(models.Model):
    """One run of a `faults.touch_db` job."""

    jid = models.CharField(max_length=100)
    pid = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.jid} in {self.pid}"
