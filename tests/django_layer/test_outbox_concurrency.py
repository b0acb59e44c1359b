"""The outbox under concurrent transactions (PostgreSQL): one jid enqueued by two at once.

SQLite lets one transaction write at a time, so these interleavings only happen on a
database with row locks; the suite runs this module on PostgreSQL (tests/postgres).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection, connections, transaction

from django_qless.core import Client
from django_qless.outbox.models import OutboxEntry
from tests.testapp.qless_jobs import add

pytestmark = pytest.mark.django_db(transaction=True)

#: Longest any step waits for the other transaction.
WAIT = 30.0


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    """Skip on SQLite, whose writers take turns: there is no interleaving to test."""
    if connection.vendor != "postgresql":
        pytest.skip("needs concurrent writing transactions: runs on PostgreSQL "
                    "(tests/postgres)")


def when_updating_the_outbox(action: Callable[[], None]) -> Callable[..., Any]:
    """A database execute wrapper that runs `action` before an UPDATE of the outbox table."""

    def wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool,
                context: Any) -> Any:
        if sql.startswith("UPDATE") and OutboxEntry._meta.db_table in sql:
            action()
        return execute(sql, params, many, context)

    return wrapper


@pytest.fixture
def first_committer() -> Iterator[dict[str, threading.Event]]:
    """A thread that enqueues jid `same` and commits, then waits for `go` before its
    on-commit put (which deletes the row); `committed` and `done` tell where it is."""
    events = {name: threading.Event() for name in ("committed", "go", "done")}
    errors: list[BaseException] = []

    def pause() -> None:
        events["committed"].set()
        events["go"].wait(WAIT)

    def run() -> None:
        try:
            with transaction.atomic():
                # Registered first, so it runs first: the row is committed, not yet put.
                transaction.on_commit(pause)
                add.using(jid="same").enqueue(1, 1)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            events["done"].set()
            connections.close_all()

    thread = threading.Thread(target=run, name="first-committer")
    thread.start()
    assert events["committed"].wait(WAIT)
    yield events
    events["go"].set()
    thread.join(WAIT)
    assert errors == []


def test_a_jid_whose_other_row_is_put_and_deleted_meanwhile_is_stored_again(
    qless: Client, first_committer: dict[str, threading.Event]
) -> None:
    # The first transaction's row is committed, so this insert of the same jid clashes
    # with it; before the update that takes the row over runs, the first commit's put
    # is made and deletes the row.
    def let_the_first_put_run() -> None:
        first_committer["go"].set()
        assert first_committer["done"].wait(WAIT)

    with connection.execute_wrapper(when_updating_the_outbox(let_the_first_put_run)):
        with transaction.atomic():
            jid = add.using(jid="same").enqueue(2, 2)
            [row] = OutboxEntry.objects.all()
            assert row.data == '{"args":[2,2],"kwargs":{}}'
    job = qless.get_job("same")
    assert jid == "same" and job is not None
    assert job.data == {"args": [2, 2], "kwargs": {}}  # the newest put wins, as in Redis
    assert OutboxEntry.objects.count() == 0


def lock_waits() -> int:
    """Backends of this cluster waiting for a lock (another transaction holds the row)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
        (count,) = cursor.fetchone()
    return int(count)


def test_the_first_commits_delete_leaves_the_row_a_later_transaction_rewrote(
    qless: Client, first_committer: dict[str, threading.Event]
) -> None:
    # This transaction takes the first one's committed row over (its update locks the
    # row); the first commit's put then tries to delete the row and waits for the lock.
    # Once this one commits, that delete must find the row rewritten and leave it.
    kept: list[bool] = []

    def after_the_first_delete() -> None:
        assert first_committer["done"].wait(WAIT)
        kept.append(OutboxEntry.objects.filter(jid="same").exists())

    with transaction.atomic():
        # Registered first, so it runs first: after the commit, before this put.
        transaction.on_commit(after_the_first_delete)
        add.using(jid="same").enqueue(2, 2)
        first_committer["go"].set()
        deadline = time.monotonic() + WAIT
        while lock_waits() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lock_waits() == 1 and not first_committer["done"].is_set()
    job = qless.get_job("same")
    assert kept == [True]
    assert job is not None and job.data == {"args": [2, 2], "kwargs": {}}
    assert OutboxEntry.objects.count() == 0
