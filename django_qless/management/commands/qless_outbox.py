"""`manage.py qless_outbox`: sweep the outbox once (cron, CI) and print what it put."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from ...conf import get_settings
from ...outbox import backlog
from ...outbox.sweeper import sweep
from ...outbox.tables import migrated, outbox_databases


def non_negative(text: str) -> float:
    """An `--age` value: seconds, at least 0."""
    value = float(text)
    if not value >= 0:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = (
        "Put the outbox rows whose commit-time put never happened (older than "
        "QLESS['OUTBOX_SWEEP_AGE']) into Redis, as a worker's sweep does, and print them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", action="append", dest="databases",
                            help="database alias to sweep (repeatable; default: every one the "
                                 "outbox is migrated to)")
        parser.add_argument("--age", type=non_negative, default=None,
                            help="sweep rows older than this many seconds (default "
                                 "QLESS['OUTBOX_SWEEP_AGE'])")

    def handle(self, *args: Any, **options: Any) -> None:
        outbox = get_settings().outbox
        if options["age"] is not None:
            outbox = dataclasses.replace(outbox, sweep_age=options["age"])
        databases = options["databases"] or outbox_databases()
        unknown = [alias for alias in databases if alias not in connections]
        if unknown:
            raise CommandError(f"unknown database {', '.join(unknown)} (DATABASES has "
                               f"{', '.join(connections)})")
        missing = [alias for alias in databases if not migrated(alias)]
        if missing:
            raise CommandError(f"no outbox table in database {', '.join(missing)}: run "
                               "manage.py migrate")
        report = sweep(outbox, databases)
        for jid in report.put:
            self.stdout.write(f"put {jid}")
        for jid in report.found:
            self.stdout.write(f"already in Redis {jid} (row deleted)")
        for alias in databases:
            left = backlog(alias)
            age = "" if left.oldest_age is None else f", oldest {left.oldest_age:.1f}s"
            self.stdout.write(f"outbox {alias}: {len(report.put)} put, "
                              f"{len(report.found)} already in Redis, {left.rows} rows left{age}")
        if report.failed:
            raise CommandError(f"{report.failed} rows could not be put; they stay for the "
                               "next sweep (see the warnings above)")
        if report.busy:
            self.stdout.write(f"{report.busy} connections skipped: another sweeper holds "
                              "their lock")
