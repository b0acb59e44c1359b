"""`manage.py qless_worker`: run qless jobs from the given queues."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from functools import partial
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...conf import WORKER_OPTIONS
from ...conf.worker_table import positive_int as positive_int  # qless_health's argparse types
from ...conf.worker_table import positive_seconds as positive_seconds
from ...core import QlessError
from ...recurring import sync_schedules
from ...worker import Supervisor, Worker, WorkerOptions
from ...worker.name_claim import check_free
from ...worker.pool import build_worker
from ...worker.presence import TTL as PRESENCE_TTL
from ...worker.reloading import run_with_reloader
from ..early_signals import EARLY

logger = logging.getLogger("django_qless.worker")


class Command(BaseCommand):
    help = (
        "Run a qless worker: pop jobs from the queues (in order, round-robin or shuffled) "
        "and run them, up to --concurrency at once per process. SIGTERM/SIGINT stop it "
        "gracefully; a second signal exits at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """One argument per entry of the worker option table (conf.worker_table)."""
        for option in WORKER_OPTIONS:
            option.kind.add_to(parser, option)

    def handle(self, *args: Any, verbosity: int, **parsed: Any) -> None:
        """Build the options, then run one worker, a supervisor, or either under the reloader."""
        _configure_logging(verbosity)
        given = _given(parsed)
        try:
            settings = WorkerOptions.from_settings(**given)
        except (QlessError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if parsed["sync_recurring"]:
            _sync_recurring()
        if parsed["reload"]:
            status = run_with_reloader(partial(self._run_reloaded, _one_process(settings, given)))
            # The status alone: the worker (in the child) has logged why, and a restart's 3
            # is no error.
            sys.exit(status or None)
        status = self._run(settings)
        if status:
            raise CommandError(f"worker exited with status {status}", returncode=status)

    def _run(self, settings: WorkerOptions) -> int:
        """Run the worker(s); configuration and connection problems become CommandErrors."""
        if EARLY.stop_requested:
            logger.info("qless worker: stopped (signal %s) before starting", EARLY.stop_requested)
            return 0
        try:
            if settings.processes > 1:
                return self._supervise(settings)
            worker = build_worker(settings)
            EARLY.hand_over(worker.handlers.receive)
            return worker.run()
        except (QlessError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        except redis.ConnectionError as exc:
            raise CommandError(f"cannot reach Redis: {exc}") from exc

    def _run_reloaded(self, settings: WorkerOptions, parent: int | None) -> int:
        """One worker in --reload's child, stopping if the reloading parent dies."""
        return self._run(settings.replace(parent_pid=parent))

    def _supervise(self, settings: WorkerOptions) -> int:
        """Fork `processes` workers and keep them running."""
        parent = os.getpid()

        def run_child(slot: int) -> int:
            name = f"{settings.name}-{slot}" if settings.name else None
            return build_worker(settings.replace(name=name, parent_pid=parent)).run()

        # Fail fast in the parent (bad queues, routing, Redis or clock, a worker name
        # another live process holds) before forking.
        worker = Worker(settings)
        worker.check()
        if settings.name:
            for slot in range(settings.processes):
                check_free(worker.client, f"{settings.name}-{slot}", PRESENCE_TTL)
        supervisor = Supervisor(settings.processes, run_child, restart=not settings.burst)
        EARLY.hand_over(supervisor.receive)
        return supervisor.run()


def _given(parsed: Mapping[str, Any]) -> dict[str, Any]:
    """The `WorkerOptions` fields the command line gave (None where the setting applies)."""
    return {option.name: option.kind.given(parsed, option)
            for option in WORKER_OPTIONS if option.worker}


def _one_process(settings: WorkerOptions, given: Mapping[str, Any]) -> WorkerOptions:
    """--reload's single worker: refuse --processes, set PROCESSES aside (a production value)."""
    if given.get("processes") not in (None, 1):
        raise CommandError("--reload runs one worker: leave out --processes")
    if settings.processes > 1:
        logger.info("qless worker: --reload runs one worker process (PROCESSES = %s applies "
                    "without --reload)", settings.processes)
    return settings.replace(processes=1)


def _sync_recurring() -> None:
    """Write the declared recurring schedules to Redis (no pruning), or refuse to start."""
    try:
        report = sync_schedules(prune=False)
    except (redis.RedisError, QlessError) as exc:
        raise CommandError(f"cannot sync recurring schedules: {exc}") from exc
    if not report.ok:
        raise CommandError("recurring schedules not synced, worker not started: "
                           + "; ".join(report.errors()))
    verdict = "synced" if report.applied else "already in sync"
    logger.info("qless worker: recurring schedules %s: %s", verdict, report.summary())


def _configure_logging(verbosity: int) -> None:
    """Log to stderr by --verbosity, unless logging is already configured for us."""
    logger = logging.getLogger("django_qless")
    if logger.hasHandlers():
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel({0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG))
