"""Workers put the due slots of cron schedules from their monitor thread."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
import redis

from django_qless.core import Client
from django_qless.core.crons import CronDefinition, CronStore
from django_qless.worker import Worker, WorkerOptions
from django_qless.worker.cron_slots import CronSlots
from tests.recurring.cron_helpers import define, slot_jobs
from tests.support import FakeClock, wait_for


def test_a_running_worker_puts_the_next_slot(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    defined_at = qless.now()
    define(qless, "* * * * *")  # the next minute is always within the lead time
    put("worker.sleep", 1.5)
    thread = threading.Thread(target=run_worker, args=("q",), daemon=True)
    thread.start()
    [job] = wait_for(lambda: slot_jobs(qless), timeout=10, what="a slot job")
    assert job.state == "scheduled" and job.runs_at is not None
    # At the slot (to within the put's own latency, never before), which is to come.
    slot = int(job.jid.split("-")[2])
    assert slot % 60 == 0 and slot <= job.runs_at < slot + 1 and slot > defined_at
    thread.join(timeout=20)
    assert not thread.is_alive()


def test_looks_once_per_interval(qless: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[float] = []
    slots = CronSlots(qless, interval=3600)
    def look() -> list[Any]:
        looks.append(1)
        return []

    monkeypatch.setattr(slots.store, "create_due", look)
    for _ in range(5):
        slots.maybe_run()
    assert looks == [1]


def test_a_redis_error_is_logged_not_raised(qless: Client, monkeypatch: pytest.MonkeyPatch,
                                            caplog: Any) -> None:
    slots = CronSlots(qless)

    def fail() -> list[Any]:
        raise redis.ConnectionError("down")

    monkeypatch.setattr(slots.store, "create_due", fail)
    slots.maybe_run()
    assert "cron slots not put: down" in caplog.text


def test_a_look_with_nothing_due_is_one_read(qless: Client,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock(1_700_000_000)
    client = Client(qless.redis, clock=clock)
    define(client, "0 0 1 1 *")  # next January
    calls: list[str] = []
    original: Callable[..., Any] = client.redis.execute_command

    def counted(*args: Any, **options: Any) -> Any:
        calls.append(str(args[0]))
        return original(*args, **options)

    monkeypatch.setattr(client.redis, "execute_command", counted)
    assert CronStore(client).create_due() == []
    assert calls == ["ZRANGEBYSCORE"]


def test_run_once_on_its_own_puts_due_slots_first(
    qless: Client, ledger: Callable[[], list[dict[str, Any]]]
) -> None:
    # The documented testing pattern: a clocked client, Worker.run_once(), no threads.
    clock = FakeClock(1_700_006_400.25)  # 2023-11-15 00:00:00.25 UTC
    client = Client(qless.redis, clock=clock)
    definition = CronDefinition(
        name="tick", expression="*/5 * * * *", tz="Europe/Paris", catch_up="latest",
        klass="worker.mark", queue="q", data=json.dumps({"args": [], "kwargs": {"tag": "c"}}),
        priority=0.0, tags=(), retries=0,
    )
    store = CronStore(client)
    with client.redis.pipeline() as pipe:
        store.queue_save(pipe, definition, clock.now)
        pipe.execute()
    worker = Worker(WorkerOptions(queues=("q",), handle_signals=False), client=client)
    assert not worker.run_once()  # 00:05 is put, scheduled, not runnable yet
    clock.now = 1_700_006_700  # 00:05
    assert worker.run_once()
    assert not worker.run_once()
    assert [(e["event"], e["tag"]) for e in ledger()] == [("run", "c")]
