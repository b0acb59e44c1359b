"""Django Tasks benchmark: django_qless's QlessBackend beside django-tasks-db and django-tasks-rq.

Run: python bench/tasks_e2e.py [--jobs N] [--only qless,tasks_db,tasks_rq] [--rounds R]

The same no-op `@task` goes through each backend: a driver process enqueues N tasks with
single `.enqueue()` calls (enqueue/s), then the system's worker is started and timed from
the first task's start to the last one's end (drain/s). One private redis-server serves
every system (one database each); django-tasks-db keeps its tasks in SQLite, recreated
before each round. The competitors run from their own virtualenv (created on first use
from bench/requirements-tasks.txt). Exit status 1 when django_qless misses a target.
"""

from __future__ import annotations

import os
import sys
import tempfile
from functools import partial
from pathlib import Path

from e2e import tasks_systems
from e2e.report import (
    DRAIN,
    DRAIN_START,
    REDIS_CPU,
    WORKER_CPU,
    Column,
    drain_checks,
    number,
    ratios,
)
from e2e.session import Plan, options, run
from e2e.systems import ensure_venv, venv_bin

COLUMNS: tuple[Column, ...] = (
    ("enqueue/s", lambda row: number(row.put_rate)),
    DRAIN,
    DRAIN_START,
    ("CPU µs/task worker", WORKER_CPU[1]),
    REDIS_CPU,
)
FIGURES = (("enqueue", "put_rate"), ("drain", "drain_rate"), ("drain+start", "drain_wall_rate"))


def main() -> int:
    """Run the benchmark and print the table, the ratios and the verdict."""
    args = options(__doc__, tasks_systems.SYSTEMS, jobs=5_000, latency=False)
    sides: list[tuple[str, str, tuple[str, ...]]] = [
        ("ours", sys.executable, tasks_systems.OUR_PACKAGES)]
    if any(name != "qless" for name in args.systems):
        ensure_venv(tasks_systems.REQUIREMENTS, tasks_systems.VENV)
        sides.append(("competitors", venv_bin("python", tasks_systems.VENV),
                      tasks_systems.COMPETITOR_PACKAGES))
    # django-tasks-db's SQLite file lives beside the logs of this run.
    os.environ["BENCH_SQLITE"] = str(Path(tempfile.mkdtemp(prefix="qless-tasks-")) / "db.sqlite3")
    plan = Plan(tasks_systems.SYSTEMS, tuple(sides), scenarios=("drain",), columns=COLUMNS,
                ratios=partial(ratios, figures=FIGURES),
                verdict=partial(drain_checks, ours_name="qless",
                                minimums=tasks_systems.MINIMUMS))
    return run(plan, args)


if __name__ == "__main__":
    sys.exit(main())
