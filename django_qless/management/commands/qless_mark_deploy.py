"""`manage.py qless_mark_deploy "label"`: record a deploy marker, drawn on every chart."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from redis import RedisError

from ...conf import DEFAULT_ALIAS
from ...core import InvalidArgumentError
from ...deploy_marks import mark_deploy
from ...exceptions import QlessConfigurationError


class Command(BaseCommand):
    help = ("Record a deploy (a label, now) on a qless connection: the admin's charts draw "
            "a marker there. Run it from your deploy script.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("label", help="what was deployed (one line, 1 to 200 characters)")
        parser.add_argument("--connection", default=DEFAULT_ALIAS,
                            help=f"QLESS connection alias (default {DEFAULT_ALIAS!r})")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            deploy = mark_deploy(options["label"], using=options["connection"])
        except (InvalidArgumentError, QlessConfigurationError, RedisError) as exc:
            raise CommandError(str(exc)) from exc
        when = dt.datetime.fromtimestamp(deploy.at, tz=dt.timezone.utc)
        self.stdout.write(f"Deploy {deploy.label!r} marked at {when:%Y-%m-%d %H:%M:%S} UTC "
                          f"on connection {options['connection']!r}.")
