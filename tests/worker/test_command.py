"""`manage.py qless_worker` options: validation, settings defaults, refusing bad setups."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError

from django_qless.core import Client
from django_qless.worker import Worker, WorkerOptions
from tests.redis_harness import RedisServer

from .conftest import job_state


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--processes", "0"], "--processes: must be >= 1"),
        (["--max-jobs", "x"], "--max-jobs: expected an integer"),
        (["--prefetch", "-1"], "--prefetch: must be >= 0"),
        (["--time-limit", "-1"], "--time-limit: must be a finite number >= 0"),
        (["--time-limit", "0"], "--time-limit: must be > 0"),
        (["--shutdown-timeout", "inf"], "--shutdown-timeout: must be a finite number"),
        (["--strategy", "random"], "invalid choice: 'random'"),
        (["bad queue!"], "invalid queue name"),
        (["--reload", "--processes", "2"], "--reload runs one worker"),
    ],
)
def test_bad_options_are_refused(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("qless_worker", *args, "--burst")


def test_queues_default_to_the_settings(
    settings: Any, qless_settings: dict[str, Any], put: Callable[..., str], qless: Client,
    run_worker: Callable[..., Worker],
) -> None:
    settings.QLESS = {**qless_settings, "WORKER": {"QUEUES": ["a", "b"], "STRATEGY": "shuffle"}}
    jids = [put("worker.noop", queue=queue) for queue in ("a", "b", "c")]
    call_command("qless_worker", burst=True, verbosity=0)
    assert [job_state(qless, jid) for jid in jids] == ["complete", "complete", "waiting"]


def test_positional_and_listed_queues_add_up(
    put: Callable[..., str], qless: Client, run_worker: Callable[..., Worker]
) -> None:
    jids = [put("worker.noop", queue=queue) for queue in ("a", "b", "c")]
    worker = run_worker("a", queues=[["b", "c"]])
    assert worker.options.queues == ("a", "b", "c")
    assert all(job_state(qless, jid) == "complete" for jid in jids)


def test_options_override_settings(settings: Any, qless_settings: dict[str, Any]) -> None:
    settings.QLESS = {**qless_settings, "WORKER": {"SHUTDOWN_TIMEOUT": 9, "MAX_JOBS": 5}}
    options = WorkerOptions.from_settings(max_jobs=2, time_limit=None)
    assert (options.max_jobs, options.shutdown_timeout, options.poll_interval) == (2, 9.0, 5.0)
    assert options.prefetch == 1


def test_prefetch_comes_from_settings_and_the_option_wins(
    settings: Any, qless_settings: dict[str, Any]
) -> None:
    settings.QLESS = {**qless_settings, "WORKER": {"PREFETCH": 0}}
    assert WorkerOptions.from_settings().prefetch == 0
    assert WorkerOptions.from_settings(prefetch=3).prefetch == 3


def test_queues_on_two_connections_are_refused(
    settings: Any, redis_server: RedisServer
) -> None:
    settings.QLESS = {"CONNECTIONS": {
        "default": {"URL": redis_server.url},
        "other": {"URL": redis_server.url.rsplit("/", 1)[0] + "/1", "QUEUES": ["b"]},
    }}
    with pytest.raises(CommandError, match="one connection only"):
        call_command("qless_worker", "a", "b", burst=True)


def test_a_bad_lease_in_the_qless_config_stops_the_start(redis_client: redis.Redis) -> None:
    redis_client.hset("ql:config", "q-heartbeat", "abc")
    with pytest.raises(CommandError, match="q-heartbeat"):
        call_command("qless_worker", "q", burst=True)


def test_unreachable_redis_is_reported(settings: Any) -> None:
    settings.QLESS = {"URL": "redis://127.0.0.1:1/0"}
    with pytest.raises(CommandError, match="cannot reach Redis"):
        call_command("qless_worker", "q", burst=True)
