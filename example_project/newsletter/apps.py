"""The newsletter app: subscribers, issues and the qless jobs that mail them."""

from __future__ import annotations

from django.apps import AppConfig


class NewsletterConfig(AppConfig):
    """`newsletter` in INSTALLED_APPS."""

    name = "newsletter"
    default_auto_field = "django.db.models.BigAutoField"
