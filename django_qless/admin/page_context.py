"""`PageContext`: what every admin view works with (request, admin site, connection alias)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.contrib.admin import AdminSite
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.http import url_has_allowed_host_and_scheme

from ..conf import get_settings
from ..connection import get_client
from ..core import Client
from . import live_requests, masking, permissions
from .masking import Redaction
from .visible import visible

if TYPE_CHECKING:
    from .admin import QlessAdmin

#: The admin's own navigation bar: (label, url name of the section's page, permission).
NAVIGATION = (
    ("Overview", "overview", permissions.VIEW),
    ("Queues", "queues", permissions.VIEW),
    ("Workers", "workers", permissions.VIEW),
    ("Functions", "functions", permissions.VIEW),
    ("Tracked", "tracked", permissions.VIEW),
    ("Failed", "failures", permissions.VIEW),
    ("Completed", "completed", permissions.VIEW),
    ("Recurring", "recurring_list", permissions.VIEW),
    ("Config", "config", permissions.VIEW),
    ("Audit", "audit", permissions.VIEW_AUDIT),
)

Crumbs = Sequence[tuple[str, str | None]]


@dataclass
class PageContext:
    """One request to a qless page or action, on one connection, with its client."""

    request: HttpRequest
    admin: QlessAdmin
    alias: str
    client: Client = field(repr=False)

    @property
    def site(self) -> AdminSite:
        """The admin site serving the page."""
        return self.admin.admin_site

    def url(self, route: str, /, **kwargs: str) -> str:
        """Reverse one of the app's URLs on this connection."""
        return reverse(
            f"{self.site.name}:django_qless_{route}", kwargs={"alias": self.alias, **kwargs}
        )

    def link(self, route: str, /, **kwargs: str) -> str | None:
        """Like `url`, but None for a value that cannot appear in a URL."""
        try:
            return self.url(route, **kwargs)
        except NoReverseMatch:
            return None

    def can(self, perm: str) -> bool:
        """Whether the user holds a qless permission."""
        return permissions.allowed(self.request, perm)

    def redaction(self) -> Redaction:
        """How this user sees job data and free text: masked, or not at all."""
        return masking.redaction(self.can(permissions.VIEW_DATA))

    def render(
        self,
        template: str,
        context: Mapping[str, Any],
        *,
        title: str,
        section: str,
        crumbs: Crumbs = (),
        status: int = 200,
    ) -> TemplateResponse:
        """Render a page inside the admin's layout (header, breadcrumbs, messages)."""
        full = {
            **self.site.each_context(self.request),
            "title": visible(title),
            "opts": self.admin.model._meta,
            "app_label": "django_qless",
            "qless_alias": self.alias,
            "qless_site": self.site.name,
            "qless_nav": self.nav(section),
            "qless_aliases": self.switch_links(),
            "qless_crumbs": self.crumbs(crumbs or [(title, None)]),
            "can_view_data": self.can(permissions.VIEW_DATA),
            "qless_media": live_requests.MEDIA,
            **context,
        }
        response = TemplateResponse(
            self.request, f"admin/django_qless/{template}", full, status=status
        )
        live_requests.prepare(self.request, response)
        return response

    def nav(self, section: str) -> list[tuple[str, str, bool]]:
        """The navigation bar: (label, url, current), the pages the user may see."""
        return [
            (label, self.url(name), name == section)
            for label, name, perm in NAVIGATION if perm == permissions.VIEW or self.can(perm)
        ]

    def crumbs(self, crumbs: Crumbs) -> list[tuple[str, str | None]]:
        """Home > Qless > (connection, when there are several) > the page's own crumbs."""
        head: list[tuple[str, str | None]] = [
            ("Home", reverse(f"{self.site.name}:index")),
            ("Qless", reverse(f"{self.site.name}:app_list", kwargs={"app_label": "django_qless"})),
        ]
        if len(get_settings().connections) > 1:
            head.append((f"Connection {self.alias}", self.url("overview")))
        return head + [(visible(label), url) for label, url in crumbs]

    def switch_links(self) -> list[tuple[str, str, bool]]:
        """The same page on each configured connection: (alias, url, current)."""
        aliases = list(get_settings().connections)
        if len(aliases) < 2:
            return []
        match = self.request.resolver_match
        name, kwargs = (match.view_name, dict(match.kwargs)) if match else ("", {})
        if "alias" not in kwargs:  # a changelist: switch to the section's own page
            name = f"{self.site.name}:django_qless_{self.admin.index_name}"
        query = self.request.GET.copy()
        query.pop("page", None)
        suffix = f"?{query.urlencode()}" if query else ""
        return [
            (alias, reverse(name, kwargs={**kwargs, "alias": alias}) + suffix, alias == self.alias)
            for alias in aliases
        ]

    def redirect_target_safe(self, target: str) -> bool:
        """Whether a redirect target stays on this host."""
        return url_has_allowed_host_and_scheme(
            target, allowed_hosts={self.request.get_host()}, require_https=self.request.is_secure()
        )

    def redirect_back(self, fallback: str) -> HttpResponse:
        """Redirect to the POSTed `next` if it stays on this host, else to `fallback`."""
        target = self.request.POST.get("next") or self.request.GET.get("next") or ""
        return HttpResponseRedirect(target if self.redirect_target_safe(target) else fallback)


def page_context_for(request: HttpRequest, admin: QlessAdmin, alias: str) -> PageContext:
    """The PageContext of a request; 404 for a connection alias that is not configured."""
    if alias not in get_settings().connections:
        raise Http404(f"No qless connection {alias!r}")
    return PageContext(request=request, admin=admin, alias=alias, client=get_client(alias))
