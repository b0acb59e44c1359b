"""`manage.py qless_health`: a worker's last-seen time in ql:workers, as a probe's exit status."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.support import wait_for

from .conftest import WorkerProcess

Spawn = Callable[..., WorkerProcess]
Ledger = Callable[[], list[dict[str, Any]]]


def probe(*args: str, **options: Any) -> str:
    """Run the probe; its stdout (raises CommandError when unhealthy)."""
    out = StringIO()
    call_command("qless_health", *args, stdout=out, **options)
    return out.getvalue()


def unhealthy(*args: str, **options: Any) -> str:
    """Run the probe expecting exit status 1; the message."""
    with pytest.raises(CommandError) as error:
        probe(*args, **options)
    assert error.value.returncode == 1
    return str(error.value)


def seen(db: redis.Redis, name: str, ago: float) -> None:
    """Register `name` in ql:workers as last seen `ago` seconds ago."""
    db.zadd("ql:workers", {name: time.time() - ago})


def test_a_recently_seen_worker_is_healthy(redis_client: redis.Redis,
                                           qless_settings: Any) -> None:
    seen(redis_client, "w1", 3)
    assert probe("w1").startswith("w1: seen 3.")


def test_a_stale_worker_is_unhealthy(redis_client: redis.Redis, qless_settings: Any) -> None:
    seen(redis_client, "w1", 120)
    assert "w1: last seen 120s ago (max 90s)" in unhealthy("w1")
    seen(redis_client, "w1", 20)
    assert "max 10s" in unhealthy("w1", "--max-age", "10")
    assert probe("w1", "--max-age", "30")


def test_a_missing_worker_is_unhealthy(redis_client: redis.Redis, qless_settings: Any) -> None:
    seen(redis_client, "other", 0)
    assert "w1: not in ql:workers" in unhealthy("w1")


def test_every_name_must_be_healthy(redis_client: redis.Redis, qless_settings: Any) -> None:
    seen(redis_client, "a", 1)
    seen(redis_client, "b", 500)
    message = unhealthy("a", "b")
    assert "b: last seen" in message and "a:" not in message


def test_the_name_can_come_from_the_environment(
    redis_client: redis.Redis, qless_settings: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POD_NAME", "pod-7")
    assert "pod-7: not in ql:workers" in unhealthy("--name-env", "POD_NAME")
    seen(redis_client, "pod-7", 1)
    assert probe("--name-env", "POD_NAME").startswith("pod-7: seen")
    monkeypatch.delenv("POD_NAME")
    assert "POD_NAME is not set" in unhealthy("--name-env", "POD_NAME")


def test_processes_expand_to_the_supervisor_names(redis_client: redis.Redis,
                                                  qless_settings: Any) -> None:
    seen(redis_client, "pod-0", 1)
    assert "pod-1: not in ql:workers" in unhealthy("pod", "--processes", "2")
    seen(redis_client, "pod-1", 1)
    lines = probe("pod", "--processes", "2").splitlines()
    assert [line.split(" ", 2)[:2] for line in lines] == [["pod-0:", "seen"], ["pod-1:", "seen"]]


def test_no_name_is_a_usage_error(qless_settings: Any) -> None:
    assert "name at least one worker" in unhealthy()


def test_unreachable_redis_is_unhealthy(settings: Any) -> None:
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0"}
    assert "cannot reach Redis" in unhealthy("w1")


def test_an_unknown_connection_is_refused(qless_settings: Any) -> None:
    assert "no connection 'other'" in unhealthy("w1", "--connection", "other")


def test_a_running_worker_stays_healthy_idle_and_busy_and_not_after_stopping(
    put: Callable[..., str], spawn: Spawn, ledger: Ledger, redis_client: redis.Redis,
) -> None:
    worker = spawn("q", "--worker-name", "probe-w", "--poll-interval", "0.2",
                   "--heartbeat-interval", "0.3")
    wait_for(lambda: redis_client.zscore("ql:workers", "probe-w"), timeout=15)
    time.sleep(1.5)  # idle: its empty pops keep it fresh
    probe("probe-w", "--max-age", "1")
    put("worker.sleep", 2.5)
    wait_for(lambda: ledger(), timeout=10)
    time.sleep(1.5)  # busy with one job: its lease renewals keep it fresh
    probe("probe-w", "--max-age", "1")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert "probe-w: not in ql:workers" in unhealthy("probe-w")
