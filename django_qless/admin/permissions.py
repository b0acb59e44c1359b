"""Permissions of the admin pages, and the guard every page and action goes through."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.views.decorators.clickjacking import xframe_options_deny

VIEW = "django_qless.view_qless"
VIEW_DATA = "django_qless.view_job_data"
RETRY = "django_qless.retry_jobs"
CANCEL = "django_qless.cancel_jobs"
EDIT = "django_qless.edit_jobs"
QUEUES = "django_qless.manage_queues"
RECURRING = "django_qless.manage_recurring"
CONFIG = "django_qless.manage_config"
VIEW_AUDIT = "django_qless.view_audit"

PAGE_METHODS = ("GET", "HEAD")
ACTION_METHODS = ("POST",)

View = Callable[..., HttpResponse]


def allowed(request: HttpRequest, perm: str) -> bool:
    """Whether the user may see the qless pages and holds `perm`."""
    user = request.user
    # Custom user models need not subclass PermissionsMixin, hence getattr.
    has_perm: Callable[[str], bool] | None = getattr(user, "has_perm", None)
    if has_perm is None or not (user.is_active and getattr(user, "is_staff", False)):
        return False
    return has_perm(VIEW) and has_perm(perm)


def guard(view: View, *, perm: str, methods: tuple[str, ...]) -> View:
    """Refuse other HTTP methods (405) and users without `perm` (403); frames denied."""

    @functools.wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method not in methods:
            return HttpResponseNotAllowed(methods)
        if not allowed(request, perm):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    denied: View = xframe_options_deny(guarded)
    return denied
