"""The metrics view: Prometheus text for a bearer token or a user allowed to view qless."""

from __future__ import annotations

import secrets

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from ..admin.permissions import VIEW
from ..admin.permissions import allowed as admin_allowed
from ..conf import get_settings
from .exposition import exposition


def allowed(request: HttpRequest) -> bool:
    """A matching `Authorization: Bearer <METRICS_TOKEN>`, or an active staff user with
    the qless view permission."""
    token = get_settings().metrics_token
    presented = bearer_token(request.headers.get("Authorization", ""))
    if token and presented is not None:
        # Constant-time: the token is a secret.
        return secrets.compare_digest(presented.encode(), token.encode())
    return hasattr(request, "user") and admin_allowed(request, VIEW)


def bearer_token(header: str) -> str | None:
    """The token of a `Bearer <token>` header, the scheme in any case (RFC 9110 11.1)."""
    scheme, separator, credentials = header.partition(" ")
    if not separator or scheme.lower() != "bearer":
        return None
    return credentials.lstrip(" ")  # RFC 6750: one or more spaces after the scheme


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Every qless metric; 401 (with a Bearer challenge) for anyone else."""
    if not allowed(request):
        response = HttpResponse("Authentication required.\n", status=401,
                                content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="qless metrics"'
        return response
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
