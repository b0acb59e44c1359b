"""URLs of the example project: the admin, qless's metrics, and a redirect to the admin."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
    # Prometheus metrics at /qless/metrics (staff with the view permission, or a token).
    path("qless/", include("django_qless.urls")),
]
