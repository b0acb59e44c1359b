"""What differs between Django 6's `django.tasks` and the backport, for the tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import django

if TYPE_CHECKING:
    from django_tasks import task
elif django.VERSION >= (6, 0):
    from django.tasks import task
else:
    from django_tasks import task

__all__ = ["DUMMY_BACKEND", "task"]

PACKAGE = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"
DUMMY_BACKEND = f"{PACKAGE}.backends.dummy.DummyBackend"
