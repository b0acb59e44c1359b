"""A worker rides out a Redis restart: it reconnects, reloads the script and goes on."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator

import pytest

from django_qless.core import Client
from tests.redis_harness import RedisServer
from tests.support import wait_for

from .conftest import WorkerProcess


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    """A redis-server of this test's own, which it may kill."""
    server = RedisServer().start()
    yield server
    server.stop()


def restart(server: RedisServer) -> None:
    """Kill the server and start a new, empty one on the same port."""
    server.stop()
    server.directory = ""
    server.start()


def test_worker_survives_a_redis_restart(
    private_redis: RedisServer, spawn: Callable[..., WorkerProcess]
) -> None:
    client = Client(private_redis.client(decode_responses=True))
    payload = {"args": [], "kwargs": {}}
    first = client.queue("q").put("worker.noop", payload)
    worker = spawn("q", url=private_redis.url)
    wait_for(lambda: (job := client.get_job(first)) and job.state == "complete", timeout=10)
    restart(private_redis)
    client = Client(private_redis.client(decode_responses=True))
    second = client.queue("q").put("worker.noop", payload)
    wait_for(lambda: (job := client.get_job(second)) and job.state == "complete", timeout=10)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert "unexpected error" not in worker.output()
    assert "Traceback" not in worker.output()
