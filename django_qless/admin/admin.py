"""Registration: one ModelAdmin per section (placeholder model) serving its rows of ROUTES."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import redis
from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path

from ..conf import DEFAULT_ALIAS
from ..core import QlessError
from . import permissions
from .feedback import problem_text
from .page_context import PageContext, page_context_for
from .routes import INDEX_ROUTES, Route, section_routes


class QlessAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Serves pages instead of a changelist; nothing can be added, changed or deleted."""

    routes: ClassVar[Sequence[Route]] = ()
    #: The route whose page the changelist shows (on the default connection).
    index_name: ClassVar[str] = ""
    #: The permission of that page: the section shows to users who hold it.
    perm: ClassVar[str] = permissions.VIEW

    def has_module_permission(self, request: HttpRequest) -> bool:
        """The Qless section shows for users who may view the pages."""
        return permissions.allowed(request, self.perm)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        """Viewing needs the `view_qless` permission (and the section page's own)."""
        return permissions.allowed(request, self.perm)

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
        """Login (admin_view), method and permission checks, then the view with its PageContext."""

        def view(request: HttpRequest, alias: str = DEFAULT_ALIAS, **kwargs: Any) -> HttpResponse:
            ctx = page_context_for(request, self, alias)
            try:
                return route.view(ctx, **kwargs)
            except redis.RedisError as exc:
                return error_page(ctx, f"Redis error on connection {alias!r}: {exc}", 503)
            except QlessError as exc:
                return error_page(ctx, problem_text(exc), 400)

        methods = permissions.ACTION_METHODS if route.action else permissions.PAGE_METHODS
        guarded = permissions.guard(view, perm=route.perm, methods=methods)
        return self.admin_site.admin_view(guarded)


def error_page(ctx: PageContext, message: str, status: int) -> HttpResponse:
    """A page saying what went wrong (the text is escaped by the template)."""
    return ctx.render(
        "error.html", {"message": message}, title="Qless error", section="", status=status
    )


def register(section: type[Model], index: str) -> None:
    """Register a QlessAdmin subclass serving a section's routes of the table."""
    routes = section_routes(section)
    perm = next(route.perm for route in routes if route.name == index)
    attrs = {"routes": routes, "index_name": index, "perm": perm, "__module__": __name__}
    admin_class = type(f"{section.__name__}Admin", (QlessAdmin,), attrs)
    admin.site.register(section, admin_class)


for _section, _index in INDEX_ROUTES.items():
    register(_section, _index)
