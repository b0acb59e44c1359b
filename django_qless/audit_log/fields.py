"""`JSONDictField`: a mapping kept as JSON text (any database, no JSON support needed)."""

from __future__ import annotations

import json
from typing import Any

from django.db import models


class JSONDictField(models.TextField):  # type: ignore[type-arg]
    """A dict stored as JSON text.

    Like the outbox's `JSONListField`, it avoids `JSONField`, whose system check opens a
    database connection in every `manage.py` command; the values are only shown, never
    queried by key.
    """

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> dict[str, Any]:
        """The stored text as a dict."""
        return {} if value is None else dict(json.loads(value))

    def to_python(self, value: Any) -> dict[str, Any]:
        """A dict from a mapping or JSON text."""
        if value is None:
            return {}
        if isinstance(value, dict):
            return value
        return dict(json.loads(value))

    def get_prep_value(self, value: Any) -> str:
        """The dict as JSON text (values that JSON cannot hold are written as text)."""
        return json.dumps(dict(value or {}), default=str, sort_keys=True)
