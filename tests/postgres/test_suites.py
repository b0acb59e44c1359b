"""The database-facing suites again, on PostgreSQL: each in a pytest of its own.

`python -m pytest` runs them on SQLite (tests.settings); here the same files run in a
child pytest with `tests.postgres_settings`, both database aliases on the session's
private cluster, so the outbox's rows, savepoints and on-commit puts meet real
transactions. The fault suite's outbox tests take PostgreSQL as a parameter instead
(tests/faults/test_outbox.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.postgres_harness import PostgresCluster

ROOT = Path(__file__).resolve().parents[2]

#: The suites that write through Django's ORM: enqueue on commit, the outbox and its sweep,
#: Django Tasks (results, on-commit enqueues), metrics of the outbox backlog.
SUITES = ("tests/django_layer", "tests/tasks")


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", SUITES)
def test_suite_passes_on_postgresql(
    path: str, postgres: PostgresCluster, request: pytest.FixtureRequest
) -> None:
    env = {**os.environ, "QLESS_TEST_POSTGRES": f"127.0.0.1:{postgres.port}",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        # --reuse-db: the test databases stay, so the next suite skips the migrations
        # and this one can be shown to have run on the cluster.
        [sys.executable, "-m", "pytest", path, "--ds", "tests.postgres_settings",
         "--reuse-db", "-p", "no:cacheprovider", "-q"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=850, check=False,
    )
    summary = _summary(done.stdout)
    request.node.user_properties.append(("postgres-run", (path, summary)))
    assert done.returncode == 0, f"{path} on PostgreSQL:\n{done.stdout[-20000:]}{done.stderr}"
    assert re.search(r"\b[1-9]\d* passed", summary), summary
    for database in ("test_qless", "test_qless_other"):
        assert "django_qless_outbox" in postgres.tables(database), database


def _summary(output: str) -> str:
    """The closing `N passed, ... in Xs` line of a pytest run, without its rules."""
    lines = [line for line in output.splitlines() if re.search(r" in [\d.]+s", line)]
    return lines[-1].strip("= ") if lines else "(no summary)"
