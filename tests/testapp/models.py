"""A model the on-commit tests write inside transactions."""

from __future__ import annotations

from django.db import models


class Note(models.Model):
    """A row a job may read once the transaction that wrote it has committed."""

    text = models.CharField(max_length=100)

    def __str__(self) -> str:
        return self.text
