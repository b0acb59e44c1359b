"""`manage.py qless_worker`: run qless jobs from the given queues."""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import autoreload

from ...conf import STRATEGIES
from ...core import QlessError
from ...recurring import sync_schedules
from ...worker import Supervisor, Worker, WorkerOptions

logger = logging.getLogger("django_qless.worker")


def integer_from(minimum: int) -> Callable[[str], int]:
    """argparse type: an integer >= `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


positive_int = integer_from(1)
non_negative_int = integer_from(0)


def seconds(text: str) -> float:
    """argparse type: a finite number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (0 <= value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def queue_list(text: str) -> list[str]:
    """argparse type: comma-separated queue names."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected one or more queue names")
    return names


class Command(BaseCommand):
    help = (
        "Run a qless worker: pop jobs from the queues (in order, round-robin or shuffled) "
        "and run them one at a time per process. SIGTERM/SIGINT stop it gracefully; a "
        "second signal exits at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("queue_names", nargs="*", metavar="queue",
                            help="queues to work (default: QLESS['WORKER']['QUEUES'])")
        parser.add_argument("--queues", type=queue_list, action="append", default=[],
                            help="comma-separated queues, added after the positional ones")
        parser.add_argument("--strategy", choices=STRATEGIES,
                            help="order in which queues are tried for each job")
        parser.add_argument("--processes", type=positive_int,
                            help="number of worker processes (each runs one job at a time)")
        parser.add_argument("--burst", action="store_true",
                            help="exit once the queues are empty")
        parser.add_argument("--max-jobs", type=positive_int,
                            help="exit (or, with --processes, restart) after this many jobs")
        parser.add_argument("--max-memory", type=positive_int, metavar="MIB",
                            help="exit (or restart) once resident memory passes this many MiB")
        parser.add_argument("--time-limit", type=positive_seconds, metavar="SECONDS",
                            help="default per-job time limit (a job's own time_limit wins)")
        parser.add_argument("--shutdown-timeout", type=seconds, metavar="SECONDS",
                            help="on SIGTERM, wait this long for the running job before "
                                 "handing it back to its queue")
        parser.add_argument("--poll-interval", "--interval", type=positive_seconds,
                            metavar="SECONDS", dest="poll_interval",
                            help="longest idle sleep when no event wakes the worker")
        parser.add_argument("--heartbeat-interval", type=positive_seconds, metavar="SECONDS",
                            help="seconds between lock renewals (default: a third of the lease)")
        parser.add_argument("--prefetch", type=non_negative_int, metavar="N",
                            help="jobs each process pops ahead of the one it runs while recent "
                                 "jobs are short (default 1; 0 pops only when free)")
        parser.add_argument("--worker-name",
                            help="worker name (default host-pid-random; with --processes a "
                                 "-<n> suffix is added)")
        parser.add_argument("--startup-delay", type=seconds, default=0.0, metavar="SECONDS",
                            help="sleep a random time up to this before the first pop")
        parser.add_argument("--reload", action="store_true",
                            help="restart when code changes (development only)")
        parser.add_argument("--sync-recurring", action="store_true",
                            help="sync the declared recurring schedules (as qless_recur, "
                                 "without --prune) before starting; refuse to start on errors")

    def handle(
        self,
        *args: Any,
        queue_names: list[str],
        queues: list[list[str]],
        strategy: str | None,
        processes: int | None,
        burst: bool,
        max_jobs: int | None,
        max_memory: int | None,
        time_limit: float | None,
        shutdown_timeout: float | None,
        poll_interval: float | None,
        heartbeat_interval: float | None,
        prefetch: int | None,
        worker_name: str | None,
        startup_delay: float,
        reload: bool,
        sync_recurring: bool,
        verbosity: int,
        **options: Any,
    ) -> None:
        """Build the options, then run one worker, a supervisor, or either under the reloader."""
        _configure_logging(verbosity)
        names = [*queue_names, *(name for group in queues for name in group)]
        try:
            settings = WorkerOptions.from_settings(
                queues=tuple(names) or None, strategy=strategy, processes=processes,
                burst=burst, max_jobs=max_jobs, max_memory_mb=max_memory,
                time_limit=time_limit, shutdown_timeout=shutdown_timeout,
                poll_interval=poll_interval, heartbeat_interval=heartbeat_interval,
                prefetch=prefetch, name=worker_name, startup_delay=startup_delay,
            )
        except (QlessError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if sync_recurring:
            _sync_recurring()
        if reload:
            if settings.processes > 1:
                raise CommandError("--reload runs one worker: leave out --processes")
            autoreload.run_with_reloader(self._run, settings)
            return
        status = self._run(settings)
        if status:
            raise CommandError(f"worker exited with status {status}", returncode=status)

    def _run(self, settings: WorkerOptions) -> int:
        """Run the worker(s); configuration and connection problems become CommandErrors."""
        try:
            if settings.processes > 1:
                return self._supervise(settings)
            return Worker(settings).run()
        except (QlessError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        except redis.ConnectionError as exc:
            raise CommandError(f"cannot reach Redis: {exc}") from exc

    def _supervise(self, settings: WorkerOptions) -> int:
        """Fork `processes` workers and keep them running."""
        parent = os.getpid()

        def run_child(slot: int) -> int:
            name = f"{settings.name}-{slot}" if settings.name else None
            return Worker(settings.replace(name=name, parent_pid=parent)).run()

        # Fail fast in the parent (bad queues, routing, Redis or clock) before forking.
        Worker(settings).check()
        return Supervisor(settings.processes, run_child, restart=not settings.burst).run()


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
