"""The check before a job is skipped only when nothing can be open: nothing stale reaches a job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections

from django_qless import signals
from django_qless.worker import Worker
from django_qless.worker.databases import ConnectionHygiene

from .test_db import file_db  # noqa: F401 - the fixture


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Aliases checked by `close_if_unusable_or_obsolete`, in order."""
    seen: list[str] = []
    original = type(connections["default"]).close_if_unusable_or_obsolete

    def counting(self: Any) -> None:
        seen.append(self.alias)
        original(self)

    for alias in connections:
        monkeypatch.setattr(type(connections[alias]), "close_if_unusable_or_obsolete", counting)
    return seen


@pytest.fixture
def only_file_db(file_db: str, monkeypatch: pytest.MonkeyPatch) -> str:  # noqa: F811
    """Hide the other aliases from the hygiene: earlier tests may hold the in-memory test
    database open, and Django never closes that one, which would keep `idle` False."""

    class OnlyFileDb:
        def all(self, initialized_only: bool = False) -> list[Any]:
            return [connections[file_db]]

    monkeypatch.setattr("django_qless.worker.databases.connections", OnlyFileDb())
    return file_db


def test_before_is_skipped_after_a_check_that_left_nothing_open(
    only_file_db: str, checks: list[str]
) -> None:
    with connections[only_file_db].cursor() as cursor:
        cursor.execute("SELECT 1")
    hygiene = ConnectionHygiene()
    hygiene.before_job()  # unknown state: checks, and closes the stale connection
    assert only_file_db in checks and connections[only_file_db].connection is None
    hygiene.after_job()
    assert hygiene.idle
    checks.clear()
    hygiene.before_job()
    assert checks == []


def test_a_connection_opened_in_between_is_checked_before_the_next_job(
    only_file_db: str, checks: list[str]
) -> None:
    hygiene = ConnectionHygiene()
    hygiene.after_job()
    assert hygiene.idle
    with connections[only_file_db].cursor() as cursor:  # e.g. a job_completed receiver
        cursor.execute("SELECT 1")
    assert not hygiene.idle
    hygiene.before_job()
    assert only_file_db in checks and connections[only_file_db].connection is None


def test_a_persistent_connection_is_checked_before_every_job(
    file_db: str, checks: list[str]  # noqa: F811 - the fixture
) -> None:
    connections[file_db].settings_dict["CONN_MAX_AGE"] = None
    hygiene = ConnectionHygiene()
    with connections[file_db].cursor() as cursor:
        cursor.execute("SELECT 1")
    hygiene.after_job()  # not obsolete: stays open
    assert connections[file_db].connection is not None and not hygiene.idle
    checks.clear()
    hygiene.before_job()
    assert checks.count(file_db) == 1


def test_a_receiver_connection_between_back_to_back_jobs_is_closed_before_the_next(
    file_db: str,  # noqa: F811 - the fixture
    put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Callable[[], list[dict[str, Any]]],
) -> None:
    def open_db(sender: Any, **kwargs: Any) -> None:
        with connections[file_db].cursor() as cursor:
            cursor.execute("SELECT 1")

    put("worker.noop")
    put("worker.db_state", file_db)  # popped with the first one's completion
    signals.job_completed.connect(open_db, weak=False)
    try:
        run_worker("q")
    finally:
        signals.job_completed.disconnect(open_db)
    assert [entry["open"] for entry in ledger()] == [False]


def test_after_is_skipped_when_nothing_can_be_open_and_checks_what_the_job_opened(
    only_file_db: str, checks: list[str]
) -> None:
    hygiene = ConnectionHygiene()
    hygiene.after_job()
    assert hygiene.idle
    checks.clear()
    hygiene.after_job()  # a job that touched no database
    assert checks == []
    with connections[only_file_db].cursor() as cursor:  # a job that queries
        cursor.execute("SELECT 1")
    hygiene.after_job()
    assert only_file_db in checks and connections[only_file_db].connection is None
