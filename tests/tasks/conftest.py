"""Fixtures of the Tasks tests: TASKS and the task app installed, QLESS on the suite's redis."""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.test import override_settings

from django_qless.connection import get_client, reset_clients
from django_qless.core import Client
from tests.redis_harness import RedisServer
from tests.support import FakeClock
from tests.tasks.compat import DUMMY_BACKEND

BACKEND = "django_qless.tasks.QlessBackend"
TASKS: dict[str, Any] = {
    "default": {"BACKEND": BACKEND, "QUEUES": ["default", "other"]},
    "tagged": {
        "BACKEND": BACKEND,
        "QUEUES": ["default"],
        "OPTIONS": {"TAGS": ["tasks", "tagged"], "RETRIES": 2, "RESULT_MAX_BYTES": 100},
    },
    "open": {"BACKEND": BACKEND, "QUEUES": []},
    "limited": {"BACKEND": BACKEND, "QUEUES": ["default"], "OPTIONS": {"TIME_LIMIT": 0.3}},
    "dummy": {"BACKEND": DUMMY_BACKEND},
}


@pytest.fixture(scope="package", autouse=True)
def tasks_installed() -> Iterator[None]:
    """The task app installed and TASKS configured for every test of this package."""
    apps = [*django_settings.INSTALLED_APPS, "tests.tasks.taskapp"]
    with override_settings(INSTALLED_APPS=apps, TASKS=TASKS):
        yield


@pytest.fixture(autouse=True)
def qless_settings(settings: Any, redis_client: redis.Redis, redis_server: RedisServer) -> Iterator[
    dict[str, Any]
]:
    """Every test starts with QLESS on the suite's (flushed) server and fresh clients."""
    settings.QLESS = {"URL": redis_server.url}
    yield settings.QLESS
    reset_clients()


@pytest.fixture
def qless(qless_settings: dict[str, Any]) -> Client:
    """The default qless client, as the backend sees it."""
    return get_client()


@pytest.fixture
def worker_clock() -> FakeClock:
    """The worker's clock: now, moved by hand so history times differ."""
    return FakeClock(float(int(time.time())))


@pytest.fixture
def worker(
    redis_server: RedisServer, qless_settings: dict[str, Any], worker_clock: FakeClock
) -> Iterator[Client]:
    """A second client standing in for a worker process (its own worker name and clock)."""
    connection = redis_server.client(decode_responses=True)
    try:
        yield Client(connection, worker_name="worker-1", clock=worker_clock)
    finally:
        connection.close()


@pytest.fixture
def tasks(tasks_installed: None) -> ModuleType:
    """The task app's tasks module, imported once TASKS is configured."""
    return importlib.import_module("tests.tasks.taskapp.tasks")
