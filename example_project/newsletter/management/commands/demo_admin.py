"""`manage.py demo_admin`: create the demo superuser, or reset its password."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Create (or reset the password of) a superuser for trying the example's admin."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument("--password", default="qless-demo")

    def handle(self, *args: Any, username: str, password: str, **options: Any) -> None:
        """Create or update the user; print the credentials."""
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_password(password)
        user.save()
        verb = "Created" if created else "Reset"
        self.stdout.write(f"{verb} superuser {username!r} with password {password!r}.")
