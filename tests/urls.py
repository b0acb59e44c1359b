"""URLs for the test suite: the stock admin, nothing of django_qless's own."""

from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
