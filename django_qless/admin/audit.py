"""Every change made from the admin pages is audited: `AuditEntry` rows (the audit page)
and Django's admin log (`LogEntry`, its "Recent actions"), written together.

`record(ctx, changes)` is the one call a view makes; `record_as(user, alias, changes)` is
the same without a request (work carried on after the page that started it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Model

from .. import models
from ..audit_log.models import TARGET_CHARS, AuditEntry, Kind
from ..core import Job

if TYPE_CHECKING:
    from .page_context import PageContext

REPR_CHARS = 200

#: Every audited action: slug (stored) -> label (shown).
ACTIONS: dict[str, str] = {
    "retry": "Retry", "timeout": "Time out", "cancel": "Cancel", "track": "Track",
    "untrack": "Untrack", "move": "Move", "priority": "Priority", "tag": "Add tags",
    "untag": "Remove tags", "undepend": "Remove dependency", "tag_retry": "Retry by tag",
    "tag_cancel": "Cancel by tag", "group_retry": "Retry failure group",
    "retry_all": "Retry every failed job", "group_cancel": "Cancel failure group",
    "pause": "Pause", "unpause": "Unpause", "queue_settings": "Queue settings",
    "latency_threshold": "Latency threshold",
    "forget": "Forget worker", "worker_pause": "Pause worker",
    "worker_resume": "Resume worker", "worker_stop": "Stop worker",
    "recurring_update": "Edit recurring job",
    "recurring_delete": "Delete recurring job", "recurring_run": "Run now",
    "cron_run": "Run now",
    "config_set": "Set config", "config_unset": "Unset config",
}

#: The placeholder model whose content type the admin log files each kind under.
LOG_MODELS: dict[Kind, type[Model]] = {
    Kind.JOB: models.Job, Kind.TAG: models.Job, Kind.QUEUE: models.Queue,
    Kind.WORKER: models.Worker, Kind.FAILURE_GROUP: models.Failure,
    Kind.RECURRING: models.RecurringJob, Kind.CRON: models.RecurringJob,
    Kind.CONFIG: models.Config,
}

#: What an audited job field reads from a job.
JOB_FIELDS: dict[str, Any] = {
    "state": lambda job: job.state,
    "queue": lambda job: job.queue_name or None,
    "worker": lambda job: job.worker or None,
    "priority": lambda job: job.priority,
    "tags": lambda job: sorted(job.tags),
    "tracked": lambda job: job.tracked,
    "dependencies": lambda job: sorted(job.dependencies),
    "retries left": lambda job: job.remaining,
}


@dataclass(frozen=True)
class Change:
    """One audited change: an action on a target, with the values it changed."""

    #: A key of `ACTIONS`.
    action: str
    kind: Kind
    #: The jid, queue, worker, group, tag, schedule or config key.
    target: str
    #: The readable sentence ("Set priority of job ... from 0 to 5").
    message: str
    before: Mapping[str, Any] = field(default_factory=dict)
    after: Mapping[str, Any] = field(default_factory=dict)


def job_values(job: Job | None, names: Sequence[str]) -> dict[str, Any]:
    """The named fields of a job (`JOB_FIELDS`); empty for a job that is gone."""
    return {} if job is None else {name: JOB_FIELDS[name](job) for name in names}


def record(ctx: PageContext, changes: Iterable[Change], *, deletion: bool = False) -> None:
    """Audit the changes a request made, as its user, on its connection."""
    record_as(ctx.request.user, ctx.alias, changes, deletion=deletion)


def record_as(user: Any, alias: str, changes: Iterable[Change], *, deletion: bool = False) -> None:
    """Write changes to the audit log and the admin log, both or neither."""
    changes = list(changes)
    if not changes:
        return
    entries = [
        AuditEntry(
            actor=user.get_username(), connection=alias, action=change.action,
            kind=change.kind, target=_short(change.target, TARGET_CHARS),
            message=change.message, before=dict(change.before), after=dict(change.after),
        )
        for change in changes
    ]
    flag = DELETION if deletion else CHANGE
    logged = [
        LogEntry(
            user_id=user.pk, content_type=_content_type(change.kind),
            object_id=change.target, object_repr=_short(change.target, REPR_CHARS),
            action_flag=flag, change_message=f"{change.message} (connection {alias!r})",
        )
        for change in changes
    ]
    with transaction.atomic():
        AuditEntry.objects.bulk_create(entries)
        LogEntry.objects.bulk_create(logged)


def _content_type(kind: Kind) -> ContentType:
    """The content type the admin log files a kind of target under (cached by Django)."""
    return ContentType.objects.get_for_model(LOG_MODELS[kind], for_concrete_model=False)


def _short(text: str, limit: int) -> str:
    """Fit a value into a column of `limit` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
