"""`manage.py qless_recur`: write the declared recurring schedules to Redis.

Exit status: 0 nothing to do or applied; 1 invalid declarations, a jid conflict or a
Redis error (nothing written for the first two); 2 `--check` found drift.
"""

from __future__ import annotations

import json
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...connection import get_client
from ...core import QlessError
from ...recurring import render
from ...recurring.sync import SyncReport, list_crons, list_templates, sync_schedules

EXIT_ERROR = 1
EXIT_DRIFT = 2


class Command(BaseCommand):
    help = (
        "Sync the recurring schedules declared with @qless_job(recur=...) and "
        "QLESS['RECURRING'] to qless: print the plan (create / update / unchanged / remove) "
        "and apply it. Recurring jobs django_qless does not manage are never touched."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true",
                            help="print the plan and write nothing")
        parser.add_argument("--check", action="store_true",
                            help="like --dry-run, but exit with status 2 if Redis differs")
        parser.add_argument("--prune", action="store_true",
                            help="remove managed schedules that are no longer declared")
        parser.add_argument("--json", action="store_true", dest="as_json",
                            help="print JSON instead of a table")
        parser.add_argument("--list", action="store_true", dest="list_only",
                            help="list every recurring job in Redis (managed or not) and "
                            "every cron schedule, and exit")

    def handle(
        self, *args: Any, dry_run: bool, check: bool, prune: bool, as_json: bool,
        list_only: bool, **options: Any,
    ) -> None:
        """Plan, print, apply; the exit status tells deploy scripts what happened."""
        try:
            if list_only:
                self._list(as_json)
                return
            report = sync_schedules(prune=prune, dry_run=dry_run or check)
        except redis.RedisError as exc:
            raise CommandError(f"cannot sync with Redis: {exc}", returncode=EXIT_ERROR) from exc
        except QlessError as exc:
            raise CommandError(str(exc), returncode=EXIT_ERROR) from exc
        self._print(report, as_json)
        if not report.ok:
            raise CommandError(
                "nothing written: " + "; ".join(report.errors()), returncode=EXIT_ERROR
            )
        if check and report.drift:
            raise CommandError(f"drift: {report.summary()}", returncode=EXIT_DRIFT)

    def _print(self, report: SyncReport, as_json: bool) -> None:
        """The plan as JSON or as a table plus a summary line."""
        if as_json:
            self.stdout.write(json.dumps(render.plan_json(report), indent=2))
            return
        for problem in report.problems:
            self.stderr.write(f"{problem.key} {problem.message} ({problem.id})")
        if report.problems:
            return
        styles = {"create": self.style.SUCCESS, "update": self.style.WARNING,
                  "remove": self.style.ERROR, "conflict": self.style.ERROR,
                  "orphan": self.style.NOTICE}
        for line in render.plan_lines(report, styles):
            self.stdout.write(line)
        if report.dry_run:
            verdict = "Dry run, nothing written"
        else:
            verdict = "Applied" if report.applied else "Nothing to do"
        style = self.style.SUCCESS if report.ok else self.style.ERROR
        self.stdout.write(style(f"{verdict}: {report.summary()}."))

    def _list(self, as_json: bool) -> None:
        """Every recurring template in Redis, then every cron schedule."""
        templates = list_templates()
        crons = list_crons()
        now = get_client().now()  # the clock the workers and syncs use
        if as_json:
            data = [render.template_json(alias, t) for alias, t in templates]
            data += [render.cron_list_json(alias, c, now) for alias, c in crons]
            self.stdout.write(json.dumps(data, indent=2))
            return
        if not templates and not crons:
            self.stdout.write("No recurring jobs in Redis.")
            return
        prefix = len({alias for alias, _ in [*templates, *crons]}) > 1
        if templates:
            rows = render.template_rows(templates, prefix)
            for line in render.table(rows, render.LIST_HEADER):
                self.stdout.write(line)
        if crons:
            if templates:
                self.stdout.write("")
            rows = render.cron_list_rows(crons, prefix, now)
            for line in render.table(rows, render.CRON_LIST_HEADER):
                self.stdout.write(line)
