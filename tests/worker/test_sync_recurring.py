"""`qless_worker --sync-recurring`: the declared schedules are written before the worker starts."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError

from django_qless import signals
from django_qless.schedules import MANAGED_TAG, schedule_jid
from django_qless.worker import Worker

from .conftest import WorkerProcess

#: The schedules tests/recurapp declares in code.
DECLARED = {schedule_jid(name) for name in
            ("recurapp.nightly_cleanup", "recurapp.poll_feed", "report-eu", "report-us")}
VACUUM = schedule_jid("vacuum")


def templates(db: redis.Redis) -> set[str]:
    """jids of the recurring templates in Redis."""
    return {key.removeprefix("ql:r:") for key in db.scan_iter("ql:r:*")}


def declare_vacuum(settings: Any, every: int) -> None:
    """Add a QLESS["RECURRING"] schedule of recurapp.vacuum on queue `q`."""
    spec = {"JOB": "recurapp.vacuum", "EVERY": every, "ARGS": ["t"], "QUEUE": "q"}
    settings.QLESS = {**settings.QLESS, "RECURRING": {"vacuum": spec}}


def test_schedules_are_in_redis_before_the_worker_starts(
    redis_client: redis.Redis, workers: list[Worker], settings: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    declare_vacuum(settings, 60)
    seen_at_start: list[set[str]] = []

    def look(sender: Worker, **kwargs: Any) -> None:
        seen_at_start.append(templates(redis_client))

    signals.worker_started.connect(look, dispatch_uid="tests.worker.sync_look")
    try:
        with caplog.at_level(logging.INFO, logger="django_qless.worker"):
            call_command("qless_worker", "q", burst=True, sync_recurring=True, verbosity=0)
    finally:
        signals.worker_started.disconnect(dispatch_uid="tests.worker.sync_look")
    assert seen_at_start == [DECLARED | {VACUUM}]
    vacuum = redis_client.hgetall(f"ql:r:{VACUUM}")
    assert (vacuum["klass"], vacuum["queue"], vacuum["interval"]) == ("recurapp.vacuum", "q", "60")
    assert MANAGED_TAG in vacuum["tags"]
    assert "recurring schedules synced: 5 create, 0 update, 0 unchanged" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="django_qless.worker"):
        call_command("qless_worker", "q", burst=True, sync_recurring=True, verbosity=0)
    assert "recurring schedules already in sync: 0 create, 0 update, 5 unchanged" in caplog.text
    assert len(workers) == 2


def test_the_sync_never_prunes(redis_client: redis.Redis, settings: Any,
                               workers: list[Worker]) -> None:
    declare_vacuum(settings, 60)
    call_command("qless_worker", "q", burst=True, sync_recurring=True, verbosity=0)
    settings.QLESS = {key: value for key, value in settings.QLESS.items() if key != "RECURRING"}
    call_command("qless_worker", "q", burst=True, sync_recurring=True, verbosity=0)
    assert VACUUM in templates(redis_client)  # no longer declared, but kept


def test_without_the_option_nothing_is_synced(redis_client: redis.Redis,
                                              workers: list[Worker]) -> None:
    call_command("qless_worker", "q", burst=True, verbosity=0)
    assert len(workers) == 1
    assert templates(redis_client) == set()


def test_a_bad_declaration_refuses_to_start_and_writes_nothing(
    redis_client: redis.Redis, settings: Any, workers: list[Worker],
) -> None:
    declare_vacuum(settings, -1)
    with pytest.raises(CommandError) as error:
        call_command("qless_worker", "q", burst=True, sync_recurring=True, verbosity=0)
    message = str(error.value)
    assert message.startswith("recurring schedules not synced, worker not started: ")
    assert "QLESS['RECURRING']['vacuum']" in message and "interval must be at least 1" in message
    assert error.value.returncode == 1
    assert workers == []
    assert templates(redis_client) == set()


def test_a_taken_jid_refuses_to_start(redis_client: redis.Redis, workers: list[Worker]) -> None:
    # An unmanaged template (no django_qless tag) already holds a declared jid.
    jid = schedule_jid("recurapp.poll_feed")
    redis_client.hset(f"ql:r:{jid}", mapping={"jid": jid, "klass": "other", "queue": "feeds",
                                              "tags": "[]", "state": "recur", "interval": "60",
                                              "data": "{}", "priority": "0", "retries": "0",
                                              "backlog": "0"})
    with pytest.raises(CommandError, match=f"worker not started: .*{jid}"):
        call_command("qless_worker", "q", burst=True, sync_recurring=True, verbosity=0)
    assert workers == []


def test_with_processes_the_supervisor_syncs_once_before_forking(
    redis_client: redis.Redis, spawn: Callable[..., WorkerProcess],
) -> None:
    worker = spawn("q", "--processes", "2", "--burst", "--sync-recurring")
    assert worker.wait() == 0, worker.output()
    assert templates(redis_client) == DECLARED
    output = worker.output()
    assert output.count("recurring schedules synced: 4 create") == 1
    assert output.index("recurring schedules synced") < output.index("started worker process")


def test_unreachable_redis_refuses_to_start(settings: Any, workers: list[Worker]) -> None:
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0"}
    with pytest.raises(CommandError, match="cannot sync recurring schedules: .*refused"):
        call_command("qless_worker", "q", burst=True, sync_recurring=True, verbosity=0)
    assert workers == []
