"""Every change made from the admin pages goes to Django's admin log (LogEntry)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model

if TYPE_CHECKING:
    from .page_context import PageContext

REPR_CHARS = 200


def record(
    ctx: PageContext,
    model: type[Model],
    changes: Iterable[tuple[str, str]],
    *,
    deletion: bool = False,
) -> None:
    """Log changes to objects of one kind: (object id, readable message) each."""
    content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
    user_id = ctx.request.user.pk
    flag = DELETION if deletion else CHANGE
    entries = [
        LogEntry(
            user_id=user_id,
            content_type=content_type,
            object_id=object_id,
            object_repr=_short(object_id),
            action_flag=flag,
            change_message=f"{message} (connection {ctx.alias!r})",
        )
        for object_id, message in changes
    ]
    LogEntry.objects.bulk_create(entries)


def _short(text: str) -> str:
    """Fit a value into LogEntry.object_repr."""
    return text if len(text) <= REPR_CHARS else text[: REPR_CHARS - 1] + "…"
