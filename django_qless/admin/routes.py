"""Every URL of the admin pages, in one table: section, path, view, name, permission, kind.

`admin.py` registers one ModelAdmin per section (placeholder model) serving its rows of
`ROUTES`; the job actions' rows are generated from `job_actions.JOB_ACTIONS`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Model
from django.http import HttpResponse
from django.urls import register_converter
from django.urls.converters import PathConverter

from .. import models
from . import permissions
from .job_actions import JOB_ACTIONS, JobAction
from .views import (
    actions,
    bulk_all,
    config,
    cron,
    failures,
    functions,
    jobs,
    latency_threshold,
    overview,
    queues,
    recurring,
    recurring_run,
    search,
    worker_control,
    workers,
)
from .views.audit import audit_page


class NameConverter(PathConverter):
    """A queue, job, worker or group name in a path: any text, newlines included.

    Django's `path` converter (`.+`) stops at a newline, and other qless clients can
    create a queue named with one: its page must still have a URL (quoted by `reverse`).
    """

    regex = r"[\s\S]+"


register_converter(NameConverter, "qless_name")

#: Start of every route: the connection alias.
ALIAS_PREFIX = "<str:alias>/"

View = Callable[..., HttpResponse]


@dataclass(frozen=True)
class Route:
    """One URL of the app, relative to its section's admin URL."""

    section: type[Model]
    path: str
    view: View
    #: URL name, registered as `django_qless_<name>`.
    name: str
    perm: str = permissions.VIEW
    #: An action (POST only, its own permission) rather than a page (GET/HEAD).
    action: bool = False


def page(
    section: type[Model], path: str, view: View, name: str, perm: str = permissions.VIEW
) -> Route:
    """A page: GET/HEAD, the view permission (and `perm`, if another)."""
    return Route(section, ALIAS_PREFIX + path, view, name, perm)


def action(section: type[Model], path: str, view: View, name: str, perm: str) -> Route:
    """An action: POST only, with its own permission (plus the view permission)."""
    return Route(section, ALIAS_PREFIX + path, view, name, perm, action=True)


def job_action_route(entry: JobAction) -> Route:
    """The route of a job action: the generic view running that entry."""
    view = functools.partial(actions.run_job_action, action=entry)
    return action(models.Job, entry.path, view, entry.name, entry.perm)


#: Section -> name of the route its changelist (the section's link in the admin) shows.
INDEX_ROUTES: dict[type[Model], str] = {
    models.Overview: "overview",
    models.Queue: "queues",
    models.Job: "search",
    models.Failure: "failures",
    models.Worker: "workers",
    models.RecurringJob: "recurring_list",
    models.Config: "config",
    models.AuditEntry: "audit",
}

ROUTES: tuple[Route, ...] = (
    page(models.Overview, "", overview.overview, "overview"),
    page(models.Overview, "functions/", functions.function_list, "functions"),
    page(models.Overview, "functions/f/<qless_name:klass>/", functions.function_page,
         "function"),
    page(models.Queue, "", queues.queue_list, "queues"),
    page(models.Queue, "q/<qless_name:name>/", queues.queue_page, "queue"),
    action(models.Queue, "pause/", queues.pause, "queue_pause", permissions.QUEUES),
    action(models.Queue, "unpause/", queues.unpause, "queue_unpause", permissions.QUEUES),
    action(models.Queue, "settings/", queues.save_settings, "queue_settings", permissions.QUEUES),
    action(models.Queue, "latency-threshold/", latency_threshold.save_threshold,
           "queue_latency_threshold", permissions.QUEUES),
    page(models.Job, "", search.search, "search"),
    page(models.Job, "j/<qless_name:jid>/", jobs.job_page, "job"),
    page(models.Job, "completed/", jobs.completed, "completed"),
    page(models.Job, "tracked/", jobs.tracked, "tracked"),
    page(models.Job, "tagged/", jobs.tagged, "tagged"),
    *(job_action_route(entry) for entry in JOB_ACTIONS),
    # Bulk runs check the permission of the single action they run (`views/bulk_all.py`).
    page(models.Job, "bulk/", bulk_all.runs, "bulk_runs"),
    page(models.Job, "bulk/new/", bulk_all.choose, "bulk_choose"),
    page(models.Job, "bulk/r/<str:run_id>/", bulk_all.run_page, "bulk_run"),
    action(models.Job, "bulk/start/", bulk_all.start, "bulk_start", permissions.VIEW),
    action(models.Job, "bulk/step/", bulk_all.step, "bulk_step", permissions.VIEW),
    action(models.Job, "bulk/abandon/", bulk_all.abandon, "bulk_abandon", permissions.VIEW),
    page(models.Failure, "", failures.groups, "failures"),
    page(models.Failure, "g/<qless_name:group>/", failures.group_page, "failure_group"),
    action(models.Failure, "retry/", failures.retry_group, "failure_retry", permissions.RETRY),
    action(models.Failure, "retry-all/", failures.retry_all, "failure_retry_all",
           permissions.RETRY),
    action(models.Failure, "cancel/", failures.cancel_group, "failure_cancel",
           permissions.CANCEL),
    page(models.Worker, "", workers.worker_list, "workers"),
    page(models.Worker, "w/<qless_name:name>/", workers.worker_page, "worker"),
    action(models.Worker, "forget/", workers.forget, "worker_forget", permissions.QUEUES),
    action(models.Worker, "control/", worker_control.control_action, "worker_control",
           permissions.QUEUES),
    page(models.RecurringJob, "", recurring.recurring_list, "recurring_list"),
    page(models.RecurringJob, "r/<qless_name:jid>/", recurring.recurring_page, "recurring"),
    action(models.RecurringJob, "update/", recurring.update, "recurring_update",
           permissions.RECURRING),
    action(models.RecurringJob, "delete/", recurring.delete, "recurring_delete",
           permissions.RECURRING),
    action(models.RecurringJob, "cron/run/", cron.run_now, "recurring_cron_run",
           permissions.RECURRING),
    action(models.RecurringJob, "run/", recurring_run.run_now, "recurring_run",
           permissions.RECURRING),
    page(models.Config, "", config.config_page, "config"),
    action(models.Config, "set/", config.set_value, "config_set", permissions.CONFIG),
    action(models.Config, "unset/", config.unset_value, "config_unset", permissions.CONFIG),
    page(models.AuditEntry, "", audit_page, "audit", permissions.VIEW_AUDIT),
)


def section_routes(section: type[Model]) -> tuple[Route, ...]:
    """The routes one section's ModelAdmin serves."""
    return tuple(route for route in ROUTES if route.section is section)
