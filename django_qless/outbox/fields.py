"""`JSONListField`: a list of strings kept as JSON text (any database, no JSON support needed)."""

from __future__ import annotations

import json
from typing import Any

from django.db import models


class JSONListField(models.TextField):  # type: ignore[type-arg]
    """A list stored as JSON text.

    Django's `JSONField` asks the database whether it supports JSON when the system checks
    run (SQLite does, after a query), so every `manage.py` command would open a connection;
    tags and dependencies only need to be stored and read back.
    """

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> list[Any]:
        """The stored text as a list."""
        return [] if value is None else list(json.loads(value))

    def to_python(self, value: Any) -> list[Any]:
        """A list from a list or JSON text."""
        if value is None:
            return []
        if isinstance(value, list | tuple):
            return list(value)
        return list(json.loads(value))

    def get_prep_value(self, value: Any) -> str:
        """The list as JSON text."""
        return json.dumps(list(value or []))
