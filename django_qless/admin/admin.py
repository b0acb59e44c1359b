"""Registration: one ModelAdmin per placeholder model, serving its pages from Redis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import redis
from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path

from .. import models
from ..conf import DEFAULT_ALIAS
from ..core import QlessError
from . import permissions
from .env import Env, make_env
from .routes import A, Route, action, page
from .views import actions, config, failures, jobs, overview, queues, recurring, workers


class QlessAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Serves pages instead of a changelist; nothing can be added, changed or deleted."""

    routes: ClassVar[Sequence[Route]] = ()
    #: The route whose page the changelist shows (on the default connection).
    index_name: ClassVar[str] = ""

    def has_module_permission(self, request: HttpRequest) -> bool:
        """The Qless section shows for users who may view the pages."""
        return permissions.allowed(request, permissions.VIEW)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        """Viewing needs the `view_qless` permission."""
        return permissions.allowed(request, permissions.VIEW)

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Nothing to add: jobs are not created from the admin."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        """No model form: changes go through the actions."""
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        """No model rows to delete."""
        return False

    def get_urls(self) -> list[URLPattern]:
        """The changelist (the section's page on the default connection) and the routes."""
        info = f"{self.opts.app_label}_{self.opts.model_name}"
        index = next(route for route in self.routes if route.name == self.index_name)
        urls = [path("", self.wrap(index), name=f"{info}_changelist")]
        urls += [path(r.path, self.wrap(r), name=f"django_qless_{r.name}") for r in self.routes]
        return urls

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The section's page on the default connection."""
        index = next(route for route in self.routes if route.name == self.index_name)
        return self.wrap(index)(request)

    def wrap(self, route: Route) -> Callable[..., HttpResponse]:
        """Login (admin_view), method and permission checks, then the view with its Env."""

        def view(request: HttpRequest, alias: str = DEFAULT_ALIAS, **kwargs: Any) -> HttpResponse:
            env = make_env(request, self, alias)
            try:
                return route.view(env, **kwargs)
            except redis.RedisError as exc:
                return error_page(env, f"Redis error on connection {alias!r}: {exc}", 503)
            except QlessError as exc:
                return error_page(env, str(exc), 400)

        methods = permissions.ACTION_METHODS if route.action else permissions.PAGE_METHODS
        guarded = permissions.guard(view, perm=route.perm, methods=methods)
        return self.admin_site.admin_view(guarded)


def error_page(env: Env, message: str, status: int) -> HttpResponse:
    """A page saying what went wrong (the text is escaped by the template)."""
    return env.render(
        "error.html", {"message": message}, title="Qless error", section="", status=status
    )


def register(model: type[Model], index: str, routes: Sequence[Route]) -> None:
    """Register a QlessAdmin subclass for a placeholder model."""
    attrs = {"routes": tuple(routes), "index_name": index, "__module__": __name__}
    admin_class = type(f"{model.__name__}Admin", (QlessAdmin,), attrs)
    admin.site.register(model, admin_class)


register(models.Overview, "overview", [page(A, overview.overview, "overview")])
register(models.Queue, "queues", [
    page(A, queues.queue_list, "queues"),
    page(A + "q/<path:name>/", queues.queue_page, "queue"),
    action(A + "pause/", queues.pause, "queue_pause", permissions.QUEUES),
    action(A + "unpause/", queues.unpause, "queue_unpause", permissions.QUEUES),
    action(A + "settings/", queues.save_settings, "queue_settings", permissions.QUEUES),
])
register(models.Job, "search", [
    page(A, jobs.search, "search"),
    page(A + "j/<path:jid>/", jobs.job_page, "job"),
    page(A + "completed/", jobs.completed, "completed"),
    page(A + "tracked/", jobs.tracked, "tracked"),
    page(A + "tagged/", jobs.tagged, "tagged"),
    *actions.ACTIONS,
])
register(models.Failure, "failures", [
    page(A, failures.groups, "failures"),
    page(A + "g/<path:group>/", failures.group_page, "failure_group"),
    action(A + "retry/", failures.retry_group, "failure_retry", permissions.RETRY),
    action(A + "retry-all/", failures.retry_all, "failure_retry_all", permissions.RETRY),
    action(A + "cancel/", failures.cancel_group, "failure_cancel", permissions.CANCEL),
])
register(models.Worker, "workers", [
    page(A, workers.worker_list, "workers"),
    page(A + "w/<path:name>/", workers.worker_page, "worker"),
    action(A + "forget/", workers.forget, "worker_forget", permissions.QUEUES),
])
register(models.RecurringJob, "recurring_list", [
    page(A, recurring.recurring_list, "recurring_list"),
    page(A + "r/<path:jid>/", recurring.recurring_page, "recurring"),
    action(A + "update/", recurring.update, "recurring_update", permissions.RECURRING),
    action(A + "delete/", recurring.delete, "recurring_delete", permissions.RECURRING),
])
register(models.Config, "config", [
    page(A, config.config_page, "config"),
    action(A + "set/", config.set_value, "config_set", permissions.CONFIG),
    action(A + "unset/", config.unset_value, "config_unset", permissions.CONFIG),
])
