"""Django database connections are closed around every job."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from django_qless.core import Client
from django_qless.worker import Worker
from tests.workerapp.qless_jobs import touch_db

from .conftest import job_state

ALIAS = "worker_file_db"


@pytest.fixture
def file_db(tmp_path: Path, django_db_blocker: Any) -> Iterator[str]:
    """A sqlite database in a file (closing an in-memory one is a no-op in Django)."""
    configured = connections.configure_settings({
        "default": connections.settings["default"],
        ALIAS: {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "w.sqlite3")},
    })
    connections.settings[ALIAS] = configured[ALIAS]
    with django_db_blocker.unblock():
        yield ALIAS
        connections[ALIAS].close()
    del connections[ALIAS]
    del connections.settings[ALIAS]


def test_connections_opened_by_a_job_are_closed_after_it(
    file_db: str, qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    jid = put("worker.touch_db", file_db)
    run_worker("q")
    assert job_state(qless, jid) == "complete"
    assert connections[file_db].connection is None


def test_the_same_job_run_inline_leaves_its_connection_open(file_db: str) -> None:
    # The control for the test above: it is the worker that closes the connection.
    touch_db.call(file_db)
    assert connections[file_db].connection is not None


def test_obsolete_connections_are_closed_before_a_job(
    file_db: str, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Callable[[], list[dict[str, Any]]],
) -> None:
    with connections[file_db].cursor() as cursor:
        cursor.execute("SELECT 1")
    assert connections[file_db].connection is not None
    put("worker.db_state", file_db)
    run_worker("q")
    assert [entry["open"] for entry in ledger()] == [False]
