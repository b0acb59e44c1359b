"""URLs for the debug toolbar tests (imported only while the toolbar is installed)."""

from debug_toolbar.toolbar import debug_toolbar_urls
from django.contrib import admin
from django.urls import path

from tests.django_layer import toolbar_views

urlpatterns = [
    path("single/", toolbar_views.single),
    path("bulk/", toolbar_views.bulk),
    path("atomic/", toolbar_views.atomic),
    path("admin/", admin.site.urls),
    *debug_toolbar_urls(),
]
