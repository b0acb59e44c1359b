"""Fixtures for the recurring tests: QLESS on the suite's server, a settable clock, a sync."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from django_qless.connection import reset_clients
from django_qless.core import Client
from django_qless.recurring import sync_schedules
from django_qless.recurring.sync import SyncReport
from tests.redis_harness import RedisServer
from tests.support import FakeClock

#: 2023-11-15 00:00:00 UTC: a midnight, so run times in the tests are easy to read.
MIDNIGHT = 1_700_006_400


#: The recurring tests' hand-moved clock (the suite's own).
Clock = FakeClock


@pytest.fixture(autouse=True)
def qless_settings(
    settings: Any, redis_client: redis.Redis, redis_server: RedisServer
) -> Iterator[dict[str, Any]]:
    """QLESS on the suite's (flushed) server, fresh clients afterwards."""
    settings.QLESS = {"URL": redis_server.url}
    yield settings.QLESS
    reset_clients()


@pytest.fixture
def clock() -> Clock:
    """Starts a quarter second after MIDNIGHT."""
    return Clock(MIDNIGHT + 0.25)


@pytest.fixture
def client(redis_server: RedisServer, clock: Clock) -> Iterator[Client]:
    """A qless client on the suite's server that reads `clock`."""
    connection = redis_server.client()
    yield Client(connection, clock=clock, worker_name="recur-test")
    connection.close()


@pytest.fixture
def sync(client: Client) -> Callable[..., SyncReport]:
    """`sync_schedules` on the default connection, through the clocked client."""
    return lambda **options: sync_schedules(clients={"default": client}, **options)
