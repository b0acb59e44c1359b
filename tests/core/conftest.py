"""Fixtures for the core client: a fake clock and clients bound to it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis

from django_qless.core import Client
from tests.support import FakeClock


@pytest.fixture
def make_client(redis_client: redis.Redis, clock: FakeClock) -> Callable[..., Client]:
    """Build more clients on the same database and clock (e.g. a second worker)."""

    def make(worker_name: str = "worker-1", **kwargs: object) -> Client:
        return Client(redis_client, clock=clock, worker_name=worker_name, **kwargs)  # type: ignore[arg-type]

    return make


@pytest.fixture
def client(make_client: Callable[..., Client]) -> Client:
    """A client named `worker-1` on the fake clock."""
    return make_client("worker-1")


@pytest.fixture
def other(make_client: Callable[..., Client]) -> Client:
    """A second client, `worker-2`, on the same database and clock."""
    return make_client("worker-2")
