"""The Django Tasks systems: django_qless's backend, django-tasks-db and django-tasks-rq.

All three run the same `tasks_bench` app (one `@task` per job kind) on Django 5.2 with the
django-tasks backport; only the settings module, and so the backend, differs. The
competitors come from a virtualenv of their own (bench/requirements-tasks.txt).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .systems import BENCH, CACHE, ROOT, System, qless_worker, venv_bin

REQUIREMENTS = BENCH / "requirements-tasks.txt"
VENV = CACHE / "venv-tasks"
OUR_PACKAGES = ("django_qless", "Django", "django-tasks", "redis", "hiredis")
COMPETITOR_PACKAGES = ("Django", "django-tasks", "django-tasks-db", "django-tasks-rq",
                       "django-rq", "rq", "redis", "hiredis")
#: Drain targets of issue 12: Tasks drain >= 5x django-tasks-db's and >= 3x django-tasks-rq's.
MINIMUMS = (("tasks_db", 5.0), ("tasks_rq", 3.0))


def _python() -> str:
    """The competitors' interpreter."""
    return venv_bin("python", VENV)


def _db_worker(url: str, burst: bool) -> list[str]:
    """django-tasks-db's worker; --batch exits once the queue is empty."""
    argv = [_python(), "-m", "django", "db_worker", "--queue-name", "bench",
            "--no-startup-delay", "--verbosity", "0"]
    return [*argv, "--batch"] if burst else argv


def _rq_worker(url: str, burst: bool) -> list[str]:
    """django-rq's rqworker with django-tasks-rq's job class; SimpleWorker forks nothing."""
    argv = [_python(), "-m", "django", "rqworker", "--job-class", "django_tasks_rq.Job",
            "--worker-class", "rq.worker.SimpleWorker", "--verbosity", "0", "bench"]
    return [*argv, "--burst"] if burst else argv


def _fresh_sqlite(system: System, env: dict[str, str]) -> None:
    """Delete the SQLite database and migrate a new one, so every scenario starts empty."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(env["BENCH_SQLITE"] + suffix).unlink(missing_ok=True)
    subprocess.run([system.python, "-m", "django", "migrate", "--verbosity", "0"], cwd=ROOT,
                   env=env, check=True)


SYSTEMS: dict[str, System] = {
    system.name: system
    for system in (
        System("qless", "django_qless QlessBackend (2 processes)", 1, sys.executable,
               qless_worker, has_burst=True, settings="tasks_bench.settings_qless",
               driver="sys_tasks"),
        System("tasks_db", "django-tasks-db, SQLite (1 process)", 2, _python(), _db_worker,
               has_burst=True, settings="tasks_bench.settings_db", driver="sys_tasks",
               reset=_fresh_sqlite),
        System("tasks_rq", "django-tasks-rq, SimpleWorker (1 process)", 3, _python(),
               _rq_worker, has_burst=True, settings="tasks_bench.settings_rq",
               driver="sys_tasks"),
    )
}
