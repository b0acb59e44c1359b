"""Puts are refused (typed, nothing written) once Redis nears maxmemory; other commands go on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from django_qless.core import Client, InvalidArgumentError, QlessError, QueueFullError
from django_qless.core import memory_guard as memory_module
from tests.conftest import snapshot
from tests.redis_harness import RedisServer

NO_ARGS: dict[str, Any] = {"args": [], "kwargs": {}}


@pytest.fixture
def server() -> Iterator[RedisServer]:
    """A private redis-server, since these tests change its maxmemory."""
    started = RedisServer(extra_args=("--maxmemory-policy", "noeviction")).start()
    yield started
    started.stop()


@pytest.fixture
def connection(server: RedisServer) -> redis.Redis:
    """A connection to the private server."""
    return redis.Redis.from_url(server.url)


def used(connection: redis.Redis) -> int:
    """Redis' used memory in bytes."""
    return int(connection.info("memory")["used_memory"])


def ballast(connection: redis.Redis, size: int, piece: int = 64 * 2**10) -> None:
    """`size` bytes under one key, sent in small pieces: a single command that large would
    leave Redis a query buffer as large, counted in used_memory until its cron frees it,
    which may happen between the test's reading of used_memory and the guard's."""
    for _ in range(size // piece):
        connection.append("ballast", b"x" * piece)


def test_puts_are_refused_above_the_limit_and_nothing_is_written(
    connection: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_module, "READ_EVERY", 0.0)
    ballast(connection, 10 * 2**20)  # so the last 5% is room enough to drain
    client = Client(connection)
    queue = client.queue("q")
    queue.put("k", NO_ARGS, jid="before")
    [running] = queue.pop()
    queue.put("k", NO_ARGS, jid="waiting")
    connection.config_set("maxmemory", int(used(connection) / 0.95))  # 95% used: above 90%
    before = snapshot(connection)
    with pytest.raises(QueueFullError, match=r"more than 90% of its maxmemory") as raised:
        queue.put("k", NO_ARGS, jid="refused")
    assert isinstance(raised.value, QlessError)
    assert isinstance(raised.value, redis.OutOfMemoryError)  # caught as a Redis error too
    assert snapshot(connection) == before
    # Below maxmemory itself, the workers' commands still run: the queue drains.
    running.complete()
    [waiting] = queue.pop()
    waiting.heartbeat()
    waiting.complete()
    connection.config_set("maxmemory", 0)  # no limit: puts are accepted again
    assert queue.put("k", NO_ARGS, jid="after") == "after"


def test_without_the_guard_redis_refuses_the_put_whole_and_it_is_typed(
    connection: redis.Redis,
) -> None:
    client = Client(connection, put_memory_limit=None)
    queue = client.queue("q")
    queue.put("k", NO_ARGS, jid="before")
    connection.config_set("maxmemory", used(connection) - 1024)
    before = snapshot(connection)
    with pytest.raises(QueueFullError, match="maxmemory") as raised:
        queue.put("k", NO_ARGS, jid="refused")
    assert isinstance(raised.value.__cause__, redis.OutOfMemoryError)
    assert snapshot(connection) == before
    connection.config_set("maxmemory", 0)


def test_memory_is_read_at_most_once_a_second(
    connection: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    original = connection.info

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(str(args[0]) if args else "")
        return original(*args, **kwargs)

    monkeypatch.setattr(connection, "info", counted)
    queue = Client(connection).queue("q")
    for n in range(20):
        queue.put("k", NO_ARGS, jid=f"j{n}")
    assert reads == ["memory"]


def test_a_redis_that_refuses_info_turns_the_guard_off(
    connection: redis.Redis, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise redis.ResponseError("unknown command 'INFO'")

    monkeypatch.setattr(connection, "info", refused)
    client = Client(connection)
    assert client.queue("q").put("k", NO_ARGS, jid="a") == "a"
    assert client.memory.limit is None
    assert "cannot read INFO memory" in caplog.text


@pytest.mark.parametrize("limit", [0, 1.5, -0.1, float("nan")])
def test_a_bad_limit_is_refused(connection: redis.Redis, limit: float) -> None:
    with pytest.raises(InvalidArgumentError, match="put_memory_limit"):
        Client(connection, put_memory_limit=limit)


def test_a_fast_producer_is_stopped_close_to_the_limit(
    connection: redis.Redis,
) -> None:
    ballast(connection, 4 * 2**20)
    limit = used(connection) + 3 * 2**20  # room for about a thousand 2 KB jobs
    connection.config_set("maxmemory", int(limit / 0.9))
    queue = Client(connection).queue("q")
    payload = {"args": ["y" * 2000], "kwargs": {}}
    with pytest.raises(QueueFullError, match="more than 90%"):
        for n in range(100_000):  # far faster than one reading a second
            queue.put("k", payload, jid=f"j{n}")
    # Stopped by the guard within a few jobs of its limit, well before Redis' own.
    assert limit <= used(connection) < limit + 256 * 1024
    connection.config_set("maxmemory", 0)
