"""Fixtures for the Django layer: QLESS pointed at the suite's redis-server, registry cleanup."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from django_qless.connection import get_client, reset_clients
from django_qless.core import Client
from tests.redis_harness import RedisServer
from tests.testapp import qless_jobs


@pytest.fixture
def qless_url(redis_server: RedisServer) -> str:
    """URL of the suite's redis-server, database 0."""
    return redis_server.url


@pytest.fixture(autouse=True)
def qless_settings(
    settings: Any, redis_client: redis.Redis, qless_url: str
) -> Iterator[dict[str, Any]]:
    """Every test starts with QLESS on the suite's (flushed) server and fresh clients."""
    settings.QLESS = {"URL": qless_url}
    qless_jobs.CALLS.clear()
    qless_jobs.SEEN_JOBS.clear()
    yield settings.QLESS
    reset_clients()


@pytest.fixture
def qless(qless_settings: dict[str, Any]) -> Client:
    """The default qless client, as the application sees it."""
    return get_client()


@pytest.fixture
def db1(redis_server: RedisServer) -> Iterator[redis.Redis]:
    """A decoded client on database 1 (the second connection in routing tests)."""
    client = redis_server.client(db=1, decode_responses=True)
    try:
        yield client
    finally:
        client.close()
