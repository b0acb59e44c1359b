"""The worker's startup health checks (django_qless/worker/health.py), against real servers."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
import redis

from django_qless.core import Client
from django_qless.exceptions import QlessConfigurationError
from django_qless.worker import Worker, WorkerOptions
from django_qless.worker.health import (
    check_startup,
    eviction_problem,
    measure_skew,
    shortest_lease,
    skew_problem,
)
from tests.redis_harness import RedisServer

pytestmark = pytest.mark.faults


def client_for(server: RedisServer, offset: float = 0.0, **options: object) -> Client:
    """A qless client on `server` whose clock is `offset` seconds off."""
    return Client(redis.Redis.from_url(server.url, **options),  # type: ignore[arg-type]
                  clock=lambda: time.time() + offset)


def test_only_noeviction_passes() -> None:
    assert eviction_problem({"maxmemory_policy": "noeviction"}) is None
    message = eviction_problem({"maxmemory_policy": "volatile-lru"})
    assert message is not None
    assert "maxmemory-policy is volatile-lru" in message and "noeviction" in message


@pytest.mark.parametrize(("skew", "lease", "refused"), [
    (0.0, 60, False), (15.0, 60, False), (-15.0, 60, False), (15.01, 60, True),
    (-15.01, 60, True), (0.7, 3, False), (0.8, 3, True),
])
def test_skew_budget_is_a_quarter_of_the_lease(skew: float, lease: float, refused: bool
                                               ) -> None:
    message = skew_problem(skew, "q", lease)
    assert (message is not None) is refused
    if message:
        assert f"{skew:+.1f} s off Redis' TIME" in message
        assert f"(q: {lease:g} s -> {lease / 4:.1f} s allowed)" in message


@pytest.mark.parametrize("offset", [-45.0, 0.0, 12.5])
def test_measured_skew_is_the_clock_offset(offset: float, server: RedisServer) -> None:
    assert measure_skew(client_for(server, offset)) == pytest.approx(offset, abs=0.05)


def test_the_shortest_lease_of_the_queues_counts(server: RedisServer) -> None:
    client = client_for(server)
    client.config.put("heartbeat", 60)
    client.config.put("b-heartbeat", 8)
    queues = [client.queue(name) for name in ("a", "b", "c")]
    assert shortest_lease(queues) == ("b", 8.0)
    with pytest.raises(QlessConfigurationError, match=r"\(b: 8 s -> 2.0 s allowed\)"):
        check_startup(client_for(server, 3.0), queues)
    check_startup(client_for(server, 1.5), queues)


def test_every_problem_is_reported_at_once(start_redis: Callable[..., RedisServer]) -> None:
    server = start_redis("--maxmemory-policy", "allkeys-lru")
    client = client_for(server, -90)
    with pytest.raises(QlessConfigurationError) as caught:
        check_startup(client, [client.queue("q")])
    assert "maxmemory-policy is allkeys-lru" in str(caught.value)
    assert "clock skew: this worker's clock is -90.0 s off" in str(caught.value)


def test_a_healthy_redis_passes(server: RedisServer) -> None:
    client = client_for(server)
    check_startup(client, [client.queue("q")])
    assert client.redis.dbsize() == 0  # the checks write nothing


def test_refused_commands_skip_their_check_with_a_warning(
    server: RedisServer, caplog: pytest.LogCaptureFixture,
) -> None:
    server.client().execute_command(
        "ACL", "SETUSER", "limited", "on", ">secret", "~*", "&*", "+@all", "-info", "-time")
    client = client_for(server, -90, username="limited", password="secret")  # noqa: S106
    with caplog.at_level(logging.WARNING, logger="django_qless.worker"):
        check_startup(client, [client.queue("q")])
    warnings = [record.getMessage() for record in caplog.records]
    assert any("cannot check maxmemory-policy" in line for line in warnings)
    assert any("cannot check clock skew" in line for line in warnings)


def test_the_clock_offset_moves_every_time_the_worker_sends(server: RedisServer) -> None:
    base = client_for(server)
    worker = Worker(WorkerOptions(queues=("q",), clock_offset=-30.0), client=base)
    assert worker.client.now() - time.time() == pytest.approx(-30, abs=0.05)
    assert Worker(WorkerOptions(queues=("q",)), client=base).client.clock is base.clock
    with pytest.raises(QlessConfigurationError, match=r"-30\.0 s off Redis' TIME"):
        check_startup(worker.client, worker.order.queues)
