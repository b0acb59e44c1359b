"""URLs for the test suite: the stock admin and django_qless's own (metrics)."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("qless/", include("django_qless.urls")),
]
